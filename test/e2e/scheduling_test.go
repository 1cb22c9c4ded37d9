package e2e_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// TestWellKnownProviderLabelSelector is what a user writes on day one: a nodeSelector on an AWS label the
// tutorial's NodePool does not mention (it restricts instance-category only). The pod gets a node of that
// family from the default NodePool, and runs there.
func TestWellKnownProviderLabelSelector(t *testing.T) {
	const family = "karpenter.k8s.aws/instance-family"
	ns := namespace(t, "well-known-label")
	deployment(t, ns, "c6a-only", 1, "500m", func(p *corev1.PodSpec) {
		p.NodeSelector = map[string]string{family: "c6a"}
	})
	pods := runningPods(t, ns, "c6a-only", 1, 2*time.Minute)
	var node corev1.Node
	if err := s.kubeClient.Get(context.Background(), client.ObjectKey{Name: pods[0].Spec.NodeName}, &node); err != nil {
		t.Fatal(err)
	}
	if got := node.Labels[family]; got != "c6a" {
		t.Errorf("pod runs on node %s with %s=%q, want c6a", node.Name, family, got)
	}
	if pool := node.Labels[v1.NodePoolLabelKey]; pool != "default" {
		t.Errorf("node %s comes from nodepool %q, want the default NodePool", node.Name, pool)
	}
}
