package pod

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkPodStateUpdate replaces one pod's karpenter_pods_state series among a thousand pods' (a pod
// changing phase), as the pod metrics controller does on every update of every pod.
func BenchmarkPodStateUpdate(b *testing.B) {
	m := newCollectors(prometheus.NewRegistry())
	node := &corev1.Node{}
	pods := make([]*corev1.Pod, 1000)
	for i := range pods {
		pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("p-%d", i)},
			Status: corev1.PodStatus{Phase: corev1.PodPending}}
		m.setState(pods[i], node)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		pod := pods[i%len(pods)]
		if pod.Status.Phase == corev1.PodPending {
			pod.Status.Phase = corev1.PodRunning
		} else {
			pod.Status.Phase = corev1.PodPending
		}
		m.setState(pod, node)
	}
}

// Replacing a pod's series and forgetting the pod leave no series of it behind, and touch no other pod's.
func TestPodStateSeriesFollowThePod(t *testing.T) {
	m := newCollectors(prometheus.NewRegistry())
	node := &corev1.Node{}
	a := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	m.setState(a, node)
	m.setState(other, node)
	a.Status.Phase = corev1.PodRunning
	m.setState(a, node)
	m.setState(a, node)
	if got := testutil.CollectAndCount(m.state); got != 2 {
		t.Fatalf("%d karpenter_pods_state series after a's change, want 2", got)
	}
	m.forget(types.NamespacedName{Namespace: "default", Name: "a"})
	if got := testutil.CollectAndCount(m.state); got != 1 {
		t.Fatalf("%d karpenter_pods_state series after a went, want 1 (b's)", got)
	}
}
