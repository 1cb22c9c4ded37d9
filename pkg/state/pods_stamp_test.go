package state_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// TestPodStoreStampMovesOnWhatDecisionsRead checks that the stamp moves when a bound pod's labels or
// annotations change (spread and affinity count labels, disruption reads karpenter.sh/do-not-disrupt),
// and stays put when only its status does.
func TestPodStoreStampMovesOnWhatDecisionsRead(t *testing.T) {
	stamp := &state.Stamp{}
	store := state.NewPodStore(stamp)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c"}}},
	}
	store.UpdatePod(pod)
	for _, step := range []struct {
		name   string
		mutate func(*corev1.Pod)
		moves  bool
	}{
		{"status only", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, false},
		{"label changed", func(p *corev1.Pod) { p.Labels["app"] = "api" }, true},
		{"label added", func(p *corev1.Pod) { p.Labels["tier"] = "front" }, true},
		{"do-not-disrupt annotated", func(p *corev1.Pod) {
			p.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
		}, true},
		{"same again", func(*corev1.Pod) {}, false},
		{"terminating", func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }, true},
	} {
		before := stamp.Value()
		step.mutate(pod)
		store.UpdatePod(pod)
		if moved := stamp.Value() != before; moved != step.moves {
			t.Errorf("%s: stamp moved = %v, want %v", step.name, moved, step.moves)
		}
	}
}
