package provisioning

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// DefaultSchedulerName is the kube-scheduler's name; pods for other schedulers are not Lathe's to place.
const DefaultSchedulerName = corev1.DefaultSchedulerName

// NominationFieldManager is the field manager Lathe writes pods' status.nominatedNodeName as (KEP-5278); a
// nomination another manager owns (the kube-scheduler's, for preemption) is not Lathe's to touch.
const NominationFieldManager = "lathe-nominator"

// Provisionable reports whether Lathe should find room for the pod, and if not, why not. A pod is
// provisionable when the kube-scheduler tried and marked it unschedulable, it is not bound, terminating,
// finished or waiting for a preemption it triggered (a status.nominatedNodeName Lathe did not set), it is
// not a daemonset's or a node's own (mirror) pod, and it is for the default scheduler.
func Provisionable(pod *corev1.Pod) (bool, string) {
	switch {
	case pod.Spec.NodeName != "":
		return false, "bound"
	case pod.DeletionTimestamp != nil:
		return false, "terminating"
	case scheduling.IsTerminal(pod):
		return false, "terminal"
	case pod.Spec.SchedulerName != "" && pod.Spec.SchedulerName != DefaultSchedulerName:
		return false, "other scheduler"
	case pod.Status.NominatedNodeName != "" && NominatedNodeNameOwner(pod) != NominationFieldManager:
		return false, "preempting"
	case scheduling.IsDaemonSetPod(pod):
		return false, "daemonset"
	case scheduling.IsMirrorPod(pod):
		return false, "mirror pod"
	case !markedUnschedulable(pod):
		return false, "not yet marked unschedulable"
	}
	return true, ""
}

// markedUnschedulable reports whether the kube-scheduler set PodScheduled=False with reason Unschedulable.
func markedUnschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// NominatedNodeNameOwner returns the field manager that last set the pod's status.nominatedNodeName, from
// its managed fields; empty when none is recorded.
func NominatedNodeNameOwner(pod *corev1.Pod) string {
	for _, entry := range pod.ManagedFields {
		if entry.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Status map[string]json.RawMessage `json:"f:status"`
		}
		if json.Unmarshal(entry.FieldsV1.Raw, &fields) != nil {
			continue
		}
		if _, ok := fields.Status["f:nominatedNodeName"]; ok {
			return entry.Manager
		}
	}
	return ""
}
