package disruption_test

import (
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

func balanced(p *v1.NodePool) { p.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced }

// busyPool is four c-16 nodes ($0.80/h each) with three pods each, using cpuEach of their 16 cpu, and the
// node x (c-4, $0.20/h) holding the pods given.
func busyPool(cpuEach string, xPods ...*corev1.Pod) []*state.StateNode {
	var nodes []*state.StateNode
	for _, n := range []string{"a", "b", "c", "d"} {
		nodes = append(nodes, node(n, 16, v1.CapacityTypeOnDemand, pod(n+"1", cpuEach), pod(n+"2", cpuEach), pod(n+"3", cpuEach)))
	}
	return append(nodes, node("x", 4, v1.CapacityTypeOnDemand, xPods...))
}

// A marginal replacement does not pay for its disruption under Balanced. Replacing x (c-4, $0.20/h) by a
// c-2 ($0.10/h) saves 0.10 of the pool's $3.40/h (2.9 %) and disrupts 2 of the pool's 18 units (x: 1 + 1
// pod; a–d: 1 + 3 pods each), 11.1 %: score 0.26 < 1/k = 0.5. WhenEmptyOrUnderutilized replaces it.
func TestBalancedRejectsAMarginalReplacement(t *testing.T) {
	nodes := busyPool("5", pod("px", "1500m"))
	d := decide(t, view(pool(), catalog(), nodes...), false).Decided()
	if d == nil || d.Command.Decision() != disruption.DecisionReplace || names(d.Command.Candidates)[0] != "x" {
		t.Fatalf("WhenEmptyOrUnderutilized: want x replaced, got %+v", d)
	}

	out := decide(t, view(pool(balanced), catalog(), busyPool("5", pod("px", "1500m"))...), false)
	if d := out.Decided(); d != nil {
		t.Fatalf("Balanced: want no decision, got %s of %v", d.Command.Decision(), names(d.Command.Candidates))
	}
	single := out.Trials[len(out.Trials)-1]
	var msg string
	for _, r := range single.Rejections {
		if r.Candidate.Name() == "x" {
			msg = r.Message
		}
	}
	if !strings.Contains(msg, "score 0.26 < threshold 0.50 (k: 2, savings 2.9%, disruption 11.1%)") {
		t.Errorf("x's rejection = %q", msg)
	}
	if len(single.Moves) != 1 || single.Moves[0].Approved || !single.Moves[0].Scored {
		t.Fatalf("moves = %+v, want one rejected, scored move", single.Moves)
	}
}

// A deletion that saves enough passes. With room on a–d (14 of 16 cpu used), deleting x saves 0.20 of
// $3.40/h (5.9 %) for 2 of 18 disruption units (11.1 %): score 0.53 >= 0.5.
func TestBalancedApprovesAWorthwhileDeletion(t *testing.T) {
	d := decide(t, view(pool(balanced), catalog(), busyPool("4666m", pod("px", "1500m"))...), false).Decided()
	if d == nil || d.Command.Decision() != disruption.DecisionDelete || strings.Join(names(d.Command.Candidates), ",") != "x" {
		t.Fatalf("want x deleted, got %+v", d)
	}
	if len(d.Moves) != 1 || !d.Moves[0].Approved || !d.Moves[0].Scored {
		t.Fatalf("moves = %+v", d.Moves)
	}
	want := (0.2 / 3.4) / (2.0 / 18)
	if got := d.Moves[0].Score.Value(); math.Abs(got-want) > 1e-9 {
		t.Errorf("score = %v, want %v", got, want)
	}
}

// A node whose pods are expensive to evict is not even simulated when deleting it outright would not pass:
// x's pod has priority 1e9 (eviction cost clamped to 10), so x costs 11 of the pool's 19 units (57.9 %) for
// 5.9 % of the cost.
func TestBalancedSkipsNodesThatCannotPass(t *testing.T) {
	critical := pod("px", "500m", func(p *corev1.Pod) { p.Spec.Priority = ptr.To[int32](1_000_000_000) })
	var nodes []*state.StateNode
	for _, n := range []string{"a", "b", "c", "d"} {
		nodes = append(nodes, node(n, 16, v1.CapacityTypeOnDemand, pod(n+"1", "15")))
	}
	nodes = append(nodes, node("x", 4, v1.CapacityTypeOnDemand, critical))
	out := decide(t, view(pool(balanced), catalog(), nodes...), false)
	if d := out.Decided(); d != nil {
		t.Fatalf("want no decision, got %s of %v", d.Command.Decision(), names(d.Command.Candidates))
	}
	single := out.Trials[len(out.Trials)-1]
	found := false
	for _, r := range single.Rejections {
		if r.Candidate.Name() == "x" && strings.Contains(r.Message, "even deleting the node would not pay for its disruption: score 0.10 < threshold 0.50") {
			found = true
		}
	}
	if !found {
		t.Errorf("no prefilter rejection for x: %+v", single.Rejections)
	}
}
