package e2e_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// TestHostnameAntiAffinity asks for four pods that refuse to share a host: Lathe launches exactly four
// nodes, and the kube-scheduler runs one pod on each.
func TestHostnameAntiAffinity(t *testing.T) {
	ns := namespace(t, "anti-affinity")
	deployment(t, ns, "solo", 4, "250m", func(p *corev1.PodSpec) {
		p.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey:   v1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "solo"}},
			}},
		}}
	})
	pods := runningPods(t, ns, "solo", 4, 2*time.Minute)
	hosts := map[string]bool{}
	for _, p := range pods {
		if hosts[p.Spec.NodeName] {
			t.Errorf("two pods on node %s", p.Spec.NodeName)
		}
		hosts[p.Spec.NodeName] = true
	}
	if claims := readyNodeClaims(t); len(claims) != 4 {
		t.Errorf("%d nodeclaims for 4 pods that each need a host of their own, want 4", len(claims))
	}
}
