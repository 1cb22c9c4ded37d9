package checker_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/checker"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// TestNodeInclusionPolicies checks that spreads count only the pods on nodes their node inclusion policies
// include, and only the domains such nodes are in, on hand-made plans that place one pod on node "a" of
// zone-a. Node "x" is the one the policies may exclude: its arch doesn't match the pod's node selector, or
// it has a taint the pod doesn't tolerate.
func TestNodeInclusionPolicies(t *testing.T) {
	honor, ignore := corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore
	web := map[string]string{"app": "web"}
	taint := corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoExecute}
	webPods := func(prefix string, n int) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range n {
			out = append(out, smallPod(prefix+"-"+string(rune('0'+i))))
		}
		return out
	}
	node := func(name, zone, arch string, taints []corev1.Taint, bound int) solver.ExistingNode {
		return solver.ExistingNode{Node: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name, v1.LabelTopologyZone: zone, v1.LabelArch: arch}},
			Spec:       corev1.NodeSpec{Taints: taints},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"),
				corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("20")}},
		}, Pods: webPods("bound-"+name, bound)}
	}
	pending := func(affinity, taints *corev1.NodeInclusionPolicy) *corev1.Pod {
		return smallPod("p", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{v1.LabelArch: "amd64"}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: web},
				NodeAffinityPolicy: affinity, NodeTaintsPolicy: taints}}
		})
	}
	// Excluded pods: x in zone-a holds three matching pods, a is empty, b and c are empty. Counted, they
	// put zone-a three ahead.
	excludedPods := func(arch string, taints []corev1.Taint) []solver.ExistingNode {
		return []solver.ExistingNode{node("x", "zone-a", arch, taints, 3), node("a", "zone-a", "amd64", nil, 0),
			node("b", "zone-b", "amd64", nil, 0), node("c", "zone-c", "amd64", nil, 0)}
	}
	// Excluded domain: a and b hold one matching pod each; x, alone in zone-c, holds none. Counted, zone-c
	// sets the minimum to 0.
	excludedDomain := func(arch string, taints []corev1.Taint) []solver.ExistingNode {
		return []solver.ExistingNode{node("a", "zone-a", "amd64", nil, 1), node("b", "zone-b", "amd64", nil, 1),
			node("x", "zone-c", arch, taints, 0)}
	}
	cases := []struct {
		name  string
		pod   *corev1.Pod
		nodes []solver.ExistingNode
		valid bool
	}{
		{"affinity honored by default, pods on excluded node", pending(nil, nil), excludedPods("arm64", nil), true},
		{"affinity honored, pods on excluded node", pending(&honor, nil), excludedPods("arm64", nil), true},
		{"affinity ignored, pods on excluded node", pending(&ignore, nil), excludedPods("arm64", nil), false},
		{"affinity honored, node included", pending(&honor, nil), excludedPods("amd64", nil), false},
		{"affinity honored, excluded domain", pending(nil, nil), excludedDomain("arm64", nil), true},
		{"affinity ignored, excluded domain", pending(&ignore, nil), excludedDomain("arm64", nil), false},
		{"taints honored, pods on excluded node", pending(&ignore, &honor), excludedPods("amd64", []corev1.Taint{taint}), true},
		{"taints ignored by default, pods on excluded node", pending(&ignore, nil), excludedPods("amd64", []corev1.Taint{taint}), false},
		{"taints ignored, pods on excluded node", pending(&ignore, &ignore), excludedPods("amd64", []corev1.Taint{taint}), false},
		{"taints honored, excluded domain", pending(nil, &honor), excludedDomain("amd64", []corev1.Taint{taint}), true},
		{"taints ignored, excluded domain", pending(nil, nil), excludedDomain("amd64", []corev1.Taint{taint}), false},
		{"taints honored, PreferNoSchedule taint", pending(nil, &honor), func() []solver.ExistingNode {
			return excludedDomain("amd64", []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}})
		}(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := withPool([]*corev1.Pod{tc.pod})
			in.Nodes = tc.nodes
			plan := &solver.Plan{Placements: []solver.Placement{{Pod: solver.PodRef{Namespace: "default", Name: "p"}, Target: "a"}}}
			err := checker.Check(in, plan, checker.Options{})
			switch {
			case tc.valid && err != nil:
				t.Errorf("valid plan rejected: %v", err)
			case !tc.valid && (err == nil || !strings.Contains(err.Error(), "topology spread")):
				t.Errorf("error = %v, want a topology spread violation", err)
			}
		})
	}
}
