package podevents_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/podevents"
)

func pod(node string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeName: node}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestPodEvent(t *testing.T) {
	now := metav1.Now()
	daemon := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
	}
	cases := []struct {
		name     string
		old, new *corev1.Pod
		want     bool
	}{
		{"bound", pod(""), pod("n"), true},
		{"created bound", nil, pod("n"), true},
		{"created pending", nil, pod(""), false},
		{"deleted while bound", pod("n"), nil, true},
		{"finished", pod("n"), pod("n", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), true},
		{"terminating", pod("n"), pod("n", func(p *corev1.Pod) { p.DeletionTimestamp = &now }), true},
		{"status churn", pod("n"), pod("n", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }), false},
		{"daemonset pod bound", pod("", daemon), pod("n", daemon), false},
	}
	for _, c := range cases {
		if got := podevents.PodEvent(c.old, c.new); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func TestWaitDedupesWrites(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	claim := &v1.NodeClaim{}
	if w := podevents.Wait(claim, now); w != 0 {
		t.Errorf("never written: wait %v, want 0", w)
	}
	claim.Status.LastPodEventTime = metav1.NewTime(now.Add(-3 * time.Second))
	if w := podevents.Wait(claim, now); w != 7*time.Second {
		t.Errorf("written 3s ago: wait %v, want 7s", w)
	}
	claim.Status.LastPodEventTime = metav1.NewTime(now.Add(-podevents.DedupeTimeout))
	if w := podevents.Wait(claim, now); w != 0 {
		t.Errorf("written a window ago: wait %v, want 0", w)
	}
}
