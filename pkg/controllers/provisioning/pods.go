package provisioning

import (
	"encoding/json"
	"time"

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
	if why := leftAlone(pod); why != "" {
		return false, why
	}
	if !markedUnschedulable(pod) {
		return false, "not yet marked unschedulable"
	}
	return true, ""
}

// UntriedGrace is how long after its creation a pod the kube-scheduler has not tried yet is planned anyway
// (see Plannable): a scheduler keeping up decides on a new pod in milliseconds, so one that has not in a
// second is behind.
const UntriedGrace = time.Second

// Plannable reports whether a provisioning pass plans the pod: a Provisionable pod, and, when untried is
// set, a pod the kube-scheduler has not tried yet (no PodScheduled condition, no scheduling gates) that
// was created UntriedGrace or more before now and is otherwise provisionable.
//
// Karpenter waits for the kube-scheduler's verdict. When many pods arrive at once the kube-scheduler falls
// behind, by tens of seconds on a busy control plane, and the pods it has not reached yet come to
// provisioning in a later, smaller pass, where a group needing hosts of its own (hostname anti-affinity)
// finds the earlier NodeClaims full and opens one claim per pod. Planning them with the pods already
// judged gives one plan for what has arrived. A pod that fits existing capacity is planned there and opens
// nothing; the kube-scheduler still decides where every pod goes. An untried pod triggers a batch once it
// is plannable (untriedIn), as a Provisionable pod does at once.
func Plannable(pod *corev1.Pod, now time.Time, untried bool) bool {
	if markedUnschedulable(pod) {
		return leftAlone(pod) == ""
	}
	wait, ok := untriedIn(pod, now, untried) // which leaves out the pods left alone
	return ok && wait <= 0
}

// untriedIn reports whether the pod is one the kube-scheduler has not tried yet, planned UntriedGrace after
// its creation when untried is set (see Plannable), and how long after now that is (zero or less: it is
// plannable now). A pod provisioning leaves alone is not.
func untriedIn(pod *corev1.Pod, now time.Time, untried bool) (time.Duration, bool) {
	if !untried || leftAlone(pod) != "" || !notTriedYet(pod) {
		return 0, false
	}
	return UntriedGrace - now.Sub(pod.CreationTimestamp.Time), true
}

// notTriedYet reports whether the kube-scheduler has not looked at the pod: it has no PodScheduled
// condition and no scheduling gates (a gated pod is not the kube-scheduler's to try until they are gone).
func notTriedYet(pod *corev1.Pod) bool {
	if len(pod.Spec.SchedulingGates) > 0 {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return false
		}
	}
	return true
}

// leftAlone returns why provisioning leaves the pod alone whatever the kube-scheduler said of it, empty when
// it does not.
func leftAlone(pod *corev1.Pod) string {
	switch {
	case pod.Spec.NodeName != "":
		return "bound"
	case pod.DeletionTimestamp != nil:
		return "terminating"
	case scheduling.IsTerminal(pod):
		return "terminal"
	case pod.Spec.SchedulerName != "" && pod.Spec.SchedulerName != DefaultSchedulerName:
		return "other scheduler"
	case pod.Status.NominatedNodeName != "" && NominatedNodeNameOwner(pod) != NominationFieldManager:
		return "preempting"
	case scheduling.IsDaemonSetPod(pod):
		return "daemonset"
	case scheduling.IsMirrorPod(pod):
		return "mirror pod"
	}
	return ""
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
