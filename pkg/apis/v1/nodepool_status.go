package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool condition types.
const (
	// ConditionTypeValidationSucceeded is True when the pool's spec passed the checks the API server cannot make.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
	// ConditionTypeNodeClassReady mirrors the readiness of the pool's node class.
	ConditionTypeNodeClassReady = "NodeClassReady"
	// ConditionTypeNodeRegistrationHealthy is False when the pool's recent launches failed to register.
	ConditionTypeNodeRegistrationHealthy = "NodeRegistrationHealthy"
	// ConditionTypeReady is the summary condition of an object.
	ConditionTypeReady = "Ready"
)

// NodePoolStatus is what Lathe observes of a NodePool.
type NodePoolStatus struct {
	// Resources is the total capacity of the pool's nodes, with "nodes" their count.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// NodeClassObservedGeneration is the generation of the node class last seen ready.
	// +optional
	NodeClassObservedGeneration int64 `json:"nodeClassObservedGeneration,omitempty"`
	// Nodes is the number of nodes the pool has.
	// +optional
	Nodes *int64 `json:"nodes,omitempty"`
	// Conditions of the pool: ValidationSucceeded, NodeClassReady, NodeRegistrationHealthy and Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
