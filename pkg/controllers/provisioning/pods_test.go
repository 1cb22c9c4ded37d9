package provisioning_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
)

func unschedulablePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Status: corev1.PodStatus{
			Phase:      corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}},
		},
	}
}

func TestProvisionable(t *testing.T) {
	isController := true
	now := metav1.Now()
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   bool
		why    string
	}{
		{name: "unschedulable pod", mutate: func(*corev1.Pod) {}, want: true},
		{name: "default scheduler by name", mutate: func(p *corev1.Pod) { p.Spec.SchedulerName = "default-scheduler" }, want: true},
		{name: "bound", mutate: func(p *corev1.Pod) { p.Spec.NodeName = "n" }, why: "bound"},
		{name: "terminating", mutate: func(p *corev1.Pod) { p.DeletionTimestamp = &now }, why: "terminating"},
		{name: "succeeded", mutate: func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, why: "terminal"},
		{name: "other scheduler", mutate: func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" }, why: "other scheduler"},
		{name: "preempting", mutate: func(p *corev1.Pod) { p.Status.NominatedNodeName = "n" }, why: "preempting"},
		{name: "preempting, nominated by the kube-scheduler", mutate: func(p *corev1.Pod) {
			p.Status.NominatedNodeName = "n"
			p.ManagedFields = []metav1.ManagedFieldsEntry{nominatedBy("kube-scheduler")}
		}, why: "preempting"},
		{name: "nominated by Lathe", mutate: func(p *corev1.Pod) {
			p.Status.NominatedNodeName = "n"
			p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}, nominatedBy(provisioning.NominationFieldManager)}
		}, want: true},
		{name: "daemonset pod", mutate: func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: &isController}}
		}, why: "daemonset"},
		{name: "mirror pod", mutate: func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "Node", Name: "n", Controller: &isController}}
		}, why: "mirror pod"},
		{name: "not tried yet", mutate: func(p *corev1.Pod) { p.Status.Conditions = nil }, why: "not yet marked unschedulable"},
		{name: "scheduling gated", mutate: func(p *corev1.Pod) { p.Status.Conditions[0].Reason = corev1.PodReasonSchedulingGated }, why: "not yet marked unschedulable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := unschedulablePod()
			tc.mutate(pod)
			got, why := provisioning.Provisionable(pod)
			if got != tc.want || why != tc.why {
				t.Errorf("Provisionable = %v, %q; want %v, %q", got, why, tc.want, tc.why)
			}
		})
	}
}

// nominatedBy is a managed-fields entry of a manager that set status.nominatedNodeName.
func nominatedBy(manager string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:nominatedNodeName":{}}}`)}}
}

// A pass plans the pods the kube-scheduler marked unschedulable and, with PLAN_UNTRIED_PODS, the ones it
// has not tried a second after their creation; never a pod provisioning leaves alone or a gated one.
func TestPlannable(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	untried := func(age time.Duration) *corev1.Pod {
		pod := unschedulablePod()
		pod.Status.Conditions = nil
		pod.CreationTimestamp = metav1.NewTime(now.Add(-age))
		return pod
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		untried bool
		want    bool
	}{
		{name: "marked unschedulable", pod: unschedulablePod(), want: true},
		{name: "marked unschedulable, untried on", pod: unschedulablePod(), untried: true, want: true},
		{name: "untried for 2s", pod: untried(2 * time.Second), untried: true, want: true},
		{name: "untried for 2s, setting off", pod: untried(2 * time.Second)},
		{name: "untried for 500ms", pod: untried(500 * time.Millisecond), untried: true},
		{name: "untried, gated", pod: func() *corev1.Pod {
			p := untried(time.Minute)
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
			return p
		}(), untried: true},
		{name: "untried, other scheduler", pod: func() *corev1.Pod {
			p := untried(time.Minute)
			p.Spec.SchedulerName = "volcano"
			return p
		}(), untried: true},
		{name: "untried, bound", pod: func() *corev1.Pod {
			p := untried(time.Minute)
			p.Spec.NodeName = "n"
			return p
		}(), untried: true},
		{name: "tried and gated", pod: func() *corev1.Pod {
			p := untried(time.Minute)
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}
			return p
		}(), untried: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := provisioning.Plannable(tc.pod, now, tc.untried); got != tc.want {
				t.Errorf("Plannable = %v, want %v", got, tc.want)
			}
		})
	}
}
