package disruption_test

import (
	"testing"

	"k8s.io/utils/ptr"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

func replicas(n int64) func(*v1.NodePool) {
	return func(p *v1.NodePool) { p.Spec.Replicas = ptr.To(n) }
}

func drifted(n *state.StateNode) *state.StateNode {
	n.NodeClaim.Status.Conditions = append(n.NodeClaim.Status.Conditions, condition(v1.ConditionTypeDrifted))
	return n
}

// Drifted nodes of a static pool are replaced by fresh claims from the template, within the Drifted
// budget, and not while the pool has more nodes than its replicas; Drift leaves them alone.
func TestStaticDriftReplacesWithinBudgets(t *testing.T) {
	nodes := func() []*state.StateNode {
		return []*state.StateNode{
			drifted(node("a", 4, v1.CapacityTypeOnDemand, pod("pa", "1"))),
			drifted(node("b", 4, v1.CapacityTypeOnDemand, pod("pb", "1"))),
			node("c", 4, v1.CapacityTypeOnDemand),
		}
	}
	d := decide(t, view(pool(replicas(3), budget("1", "", 0)), catalog(), nodes()...), false).Decided()
	if d == nil || d.Method.Reason() != v1.DisruptionReasonDrifted || d.Method.ConsolidationType() != "" {
		t.Fatalf("want a static drift decision, got %+v", d)
	}
	if _, ok := d.Method.(disruption.StaticDrift); !ok {
		t.Fatalf("decided by %T, want StaticDrift", d.Method)
	}
	if got := names(d.Command.Candidates); len(got) != 1 || len(d.Command.Replacements) != 1 {
		t.Fatalf("budget 1: candidates %v, %d replacements", got, len(d.Command.Replacements))
	}
	if r := d.Command.Replacements[0]; r.InstanceTypeNames[0] != "c-2" || len(r.Pods) != 0 {
		t.Errorf("replacement %+v, want an empty claim whose cheapest type is c-2", r)
	}

	d = decide(t, view(pool(replicas(3), budget("100%", "", 0)), catalog(), nodes()...), false).Decided()
	if d == nil || len(d.Command.Candidates) != 2 || len(d.Command.Replacements) != 2 {
		t.Fatalf("budget 100%%: %+v", d)
	}

	// Over its replicas, the pool scales down first.
	if d := decide(t, view(pool(replicas(2), budget("100%", "", 0)), catalog(), nodes()...), false).Decided(); d != nil {
		t.Fatalf("over replicas: decided %s of %v", d.Command.Decision(), names(d.Command.Candidates))
	}
}
