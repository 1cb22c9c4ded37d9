package solver_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// TestPlacementsFollowTheBindingOrder checks that a plan lists the placements on existing nodes in
// sequence order, each once, and that with the new claims' pods they number every pod placed from 0.
func TestPlacementsFollowTheBindingOrder(t *testing.T) {
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	in := input(append(append(pods(4, "one", "1", "1Gi"), pods(2, "six", "6", "1Gi")...), pods(3, "half", "500m", "512Mi")...), nodePool("pool"))
	in.Nodes = []solver.ExistingNode{existingNode("node-a", nil, small), existingNode("node-b", nil, small)}
	plan, err := solver.Solve(context.Background(), in, solver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Placements) == 0 || len(plan.NodeClaims) == 0 || len(plan.Unschedulable) > 0 {
		t.Fatalf("want pods both on the nodes and on new claims, got %d placements, %d claims, %d unschedulable",
			len(plan.Placements), len(plan.NodeClaims), len(plan.Unschedulable))
	}
	var seqs []int
	for i, p := range plan.Placements {
		if i > 0 && p.Sequence <= plan.Placements[i-1].Sequence {
			t.Fatalf("placement %d (sequence %d) follows sequence %d", i, p.Sequence, plan.Placements[i-1].Sequence)
		}
		seqs = append(seqs, p.Sequence)
	}
	for _, nc := range plan.NodeClaims {
		seqs = append(seqs, nc.Sequences...)
	}
	slices.Sort(seqs)
	for i, s := range seqs {
		if s != i {
			t.Fatalf("sequences of the placed pods are %v, want 0 to %d", seqs, len(in.Pods)-1)
		}
	}
	if len(seqs) != len(in.Pods) {
		t.Fatalf("%d pods placed, want %d", len(seqs), len(in.Pods))
	}
}
