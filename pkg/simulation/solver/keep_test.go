package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// A plan made again with earlier places moves only the pods a new seed displaces. Three 2-cpu nodes each
// held two 900m pods; a new pod that needs a host of its own (hostname anti-affinity) comes. Packed afresh,
// first fit puts the seed on the first node and every pod after it one place further down (three pods move);
// keeping places, only the one pod the seed pushes off its node moves.
func TestEarlierPlacesMoveOnlyWhatASeedDisplaces(t *testing.T) {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	in := input(nil, nodePool("default"))
	in.EarlierPlaces = map[solver.PodRef]string{}
	for i, node := range []string{"node-1", "node-2", "node-3"} {
		in.Nodes = append(in.Nodes, existingNode(node, map[string]string{v1.LabelTopologyZone: "zone-a"}, alloc))
		for _, name := range []string{"a", "b"} {
			p := pod(name+string(rune('1'+i)), "900m", "1Gi", withLabels(map[string]string{"app": "web"}))
			in.Pods = append(in.Pods, p)
			in.EarlierPlaces[solver.PodRef{Namespace: p.Namespace, Name: p.Name}] = node
		}
	}
	in.Pods = append(in.Pods, pod("seed", "900m", "1Gi", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "seed"}},
		}}}}
	}))
	moved := func(plan *solver.Plan) int {
		t.Helper()
		if len(plan.Unschedulable) > 0 {
			t.Fatalf("unschedulable: %v", reasonsOf(plan))
		}
		n := 0
		for _, pl := range plan.Placements {
			if earlier, ok := in.EarlierPlaces[pl.Pod]; ok && earlier != pl.Target {
				n++
			}
		}
		for _, c := range plan.NodeClaims {
			for _, ref := range c.Pods {
				if _, ok := in.EarlierPlaces[ref]; ok {
					n++
				}
			}
		}
		return n
	}
	kept := solveChecked(t, in, solver.Options{})
	afresh := in
	afresh.EarlierPlaces = nil
	fresh := solveChecked(t, afresh, solver.Options{})
	if got := moved(fresh); got != 3 {
		t.Errorf("packed afresh, %d pods moved; the scenario expects first fit to move 3", got)
	}
	if got := moved(kept); got != 1 {
		t.Errorf("keeping earlier places, %d pods moved, want 1", got)
	}
	if kept.PricePerHour > fresh.PricePerHour+1e-9 {
		t.Errorf("keeping places costs $%.3f/h, packing afresh $%.3f/h", kept.PricePerHour, fresh.PricePerHour)
	}
}
