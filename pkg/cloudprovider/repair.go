package cloudprovider

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// RepairPolicy tells node repair when a node condition means the node is broken: a node whose condition
// ConditionType has had ConditionStatus for longer than TolerationDuration is replaced.
type RepairPolicy struct {
	ConditionType      corev1.NodeConditionType
	ConditionStatus    corev1.ConditionStatus
	TolerationDuration time.Duration
}
