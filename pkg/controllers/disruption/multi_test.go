package disruption_test

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// randomNodes are nodes of random sizes holding random pods: all of one size when uniform (so that the
// slot bound applies), else of mixed sizes.
func randomNodes(rng *rand.Rand, uniform bool) []*state.StateNode {
	sizes := []string{"250m", "500m", "1", "1500m", "3"}
	each := sizes[rng.Intn(len(sizes))]
	var nodes []*state.StateNode
	for i := range 3 + rng.Intn(20) {
		name := fmt.Sprintf("n-%02d", i)
		var pods []*corev1.Pod
		for j := range 1 + rng.Intn(5) {
			size := each
			if !uniform {
				size = sizes[rng.Intn(len(sizes))]
			}
			pods = append(pods, pod(fmt.Sprintf("%s-p%d", name, j), size))
		}
		nodes = append(nodes, node(name, []int64{4, 8, 16}[rng.Intn(3)], v1.CapacityTypeOnDemand, pods...))
	}
	return nodes
}

// Multi-node consolidation's search (from the capacity bound down, then bisecting) finds the longest
// prefix one simulation can remove, as trying every prefix does, when the pods are all of one size.
// With pods of mixed sizes removability is not monotone in the prefix length (a prefix may need two new
// nodes where a longer one needs one), so any search that doesn't try every prefix can miss the longest;
// there the command found must still be one a simulation of exactly its candidates confirms.
func TestMultiNodeSearchFindsTheLongestRemovablePrefix(t *testing.T) {
	ctx := context.Background()
	m := disruption.NewMultiNodeConsolidation(false, solver.Options{})
	for seed := int64(0); seed < 80; seed++ {
		uniform := seed%2 == 0
		rng := rand.New(rand.NewSource(seed))
		v := view(pool(), catalog(2, 4, 8, 16, 32), randomNodes(rng, uniform)...)
		all, _, _ := disruption.Candidates(v, disruption.Graceful)
		var cands []*disruption.Candidate
		for _, c := range all {
			if ok, _ := m.ShouldDisrupt(c); ok {
				cands = append(cands, c)
			}
		}
		disruption.SortByDisruptionCost(cands)
		want := 0
		for k := 2; k <= len(cands); k++ {
			if _, why, err := m.Recheck(ctx, v, cands[:k]); err != nil {
				t.Fatal(err)
			} else if why == "" {
				want = k
			}
		}
		cmd, _, err := m.Compute(ctx, v, disruption.Budgets(v, m.Reason()), cands)
		if err != nil {
			t.Fatal(err)
		}
		got := len(cmd.Candidates)
		if uniform && got != want {
			t.Errorf("seed %d: multi-node consolidation removes %d nodes, the longest removable prefix is %d", seed, got, want)
		}
		if got == 0 {
			continue
		}
		again, why, err := m.Recheck(ctx, v, cands[:got])
		if err != nil || why != "" || again.Decision() != cmd.Decision() || again.SavingsPerHour != cmd.SavingsPerHour {
			t.Errorf("seed %d: the %d-node command is not confirmed: %v %q %+v", seed, got, err, why, again)
		}
	}
}

// With a budget of 100 %, the consolidation scale test's cluster (identical nodes at 34 % use) reaches its
// final size within three decisions: each decision takes every node it can, not a fixed number.
func TestFullBudgetConsolidatesWithinThreeDecisions(t *testing.T) {
	ctx := context.Background()
	p := pool(budget("100%", "", 0))
	var nodes []*state.StateNode
	for i := range 60 {
		name := fmt.Sprintf("node-%03d", i)
		var pods []*corev1.Pod
		for j := range 10 {
			pods = append(pods, pod(fmt.Sprintf("%s-p%d", name, j), "544m"))
		}
		nodes = append(nodes, node(name, 16, v1.CapacityTypeOnDemand, pods...))
	}
	methods := disruption.Methods(false, solver.Options{})
	decisions := 0
	for ; decisions < 10; decisions++ {
		v := view(p, catalog(2, 4, 8, 16, 32), nodes...)
		out, err := disruption.Decide(ctx, v, methods)
		if err != nil {
			t.Fatal(err)
		}
		d := out.Decided()
		if d == nil {
			break
		}
		nodes = carryOut(t, v, d.Command, decisions)
	}
	if decisions > 3 {
		t.Errorf("took %d decisions to reach %d nodes, want at most 3", decisions, len(nodes))
	}
	if len(nodes) > 23 { // 600 pods of 544m hold in 21 nodes of 16 cpu (29 pods each, room permitting)
		t.Errorf("ended with %d nodes", len(nodes))
	}
}

// carryOut applies a command to the view's nodes as the cluster would: the candidates go, the
// replacements come up (as nodes of their cheapest type), and the displaced pods land where the solver
// places them.
func carryOut(t *testing.T, v *disruption.View, cmd disruption.Command, round int) []*state.StateNode {
	t.Helper()
	gone := map[string]bool{}
	var displaced []*corev1.Pod
	for _, c := range cmd.Candidates {
		gone[c.Name()] = true
		displaced = append(displaced, c.ReschedulablePods...)
	}
	var kept []*state.StateNode
	var existing []solver.ExistingNode
	for _, n := range v.Snapshot.Nodes {
		if !gone[n.Node.Name] {
			kept = append(kept, n)
			existing = append(existing, solver.ExistingNode{Node: n.Node, Pods: n.Pods})
		}
	}
	plan, err := solver.Solve(context.Background(), solver.Input{Pods: displaced, Nodes: existing, NodePools: v.LaunchablePools, InstanceTypes: v.InstanceTypes}, solver.Options{})
	if err != nil || len(plan.Unschedulable) > 0 {
		t.Fatalf("carrying out %s of %d nodes: %v %v", cmd.Decision(), len(cmd.Candidates), err, plan.Unschedulable)
	}
	byName := map[string]*corev1.Pod{}
	for _, p := range displaced {
		byName[p.Name] = p
	}
	onNode := map[string][]*corev1.Pod{}
	for _, pl := range plan.Placements {
		onNode[pl.Target] = append(onNode[pl.Target], byName[pl.Pod.Name])
	}
	var out []*state.StateNode
	for _, n := range kept {
		out = append(out, node(n.Node.Name, n.Allocatable.Cpu().Value(), v1.CapacityTypeOnDemand, append(clonePods(n.Pods), onNode[n.Node.Name]...)...))
	}
	for i, nc := range plan.NodeClaims {
		cpu, err := strconv.ParseInt(strings.TrimPrefix(nc.InstanceTypeNames[0], "c-"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		var pods []*corev1.Pod
		for _, ref := range nc.Pods {
			pods = append(pods, byName[ref.Name])
		}
		out = append(out, node(fmt.Sprintf("new-%d-%d", round, i), cpu, v1.CapacityTypeOnDemand, pods...))
	}
	return out
}

func clonePods(pods []*corev1.Pod) []*corev1.Pod { return append([]*corev1.Pod(nil), pods...) }
