package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

func TestIsReschedulable(t *testing.T) {
	controlled := func(kind string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			yes := true
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: "owner", Controller: &yes}}
		}
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		want   bool
	}{
		{"plain", func(*corev1.Pod) {}, true},
		{"deployment's", controlled("ReplicaSet"), true},
		{"daemonset's", controlled("DaemonSet"), false},
		{"mirror by owner", controlled("Node"), false},
		{"mirror by annotation", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }, false},
		{"succeeded", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, false},
		{"failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, false},
		{"terminating", func(p *corev1.Pod) { p.DeletionTimestamp = &now }, false},
		{"terminating statefulset's", func(p *corev1.Pod) { controlled("StatefulSet")(p); p.DeletionTimestamp = &now }, true},
		{"tolerates the disrupted taint", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: v1.DisruptedNoScheduleTaint.Key, Operator: corev1.TolerationOpExists}}
		}, false},
		{"tolerates everything", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}, false},
		{"tolerates another taint", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "example.com/gpu", Operator: corev1.TolerationOpExists}}
		}, true},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		tc.mutate(pod)
		if got := scheduling.IsReschedulable(pod); got != tc.want {
			t.Errorf("%s: IsReschedulable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
