package disruption

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Budget is what a NodePool's budgets allow for one reason right now.
type Budget struct {
	// Allowed is what the budgets allow before subtracting the nodes already disrupting (the
	// karpenter_nodepools_allowed_disruptions metric).
	Allowed int
	// Disrupting counts the pool's nodes that are being deleted or are not ready.
	Disrupting int
	// Remaining is how many more nodes may be disrupted now: max(Allowed − Disrupting, 0).
	Remaining int
	// Nodes is the pool's node count the budgets were scaled over.
	Nodes int
	// Err is set when a budget could not be read; Remaining is then 0 (fail closed).
	Err error
}

// Budgets computes, for every NodePool of the view, how many of its nodes may be disrupted now for the
// reason (upstream's formula): the pool's nodes are its managed, initialized nodes whose instance is not
// already terminating; those not ready or marked for deletion are already disrupting and use up budget.
func Budgets(v *View, reason v1.DisruptionReason) map[string]Budget {
	nodes := map[string]int{}
	disrupting := map[string]int{}
	for _, n := range v.Snapshot.Nodes {
		if n.NodeClaim == nil || n.NodePool == "" ||
			!meta.IsStatusConditionTrue(n.NodeClaim.Status.Conditions, v1.ConditionTypeInitialized) ||
			meta.IsStatusConditionTrue(n.NodeClaim.Status.Conditions, v1.ConditionTypeInstanceTerminating) {
			continue
		}
		nodes[n.NodePool]++
		if n.MarkedForDeletion || !nodeReady(n.Node) {
			disrupting[n.NodePool]++
		}
	}
	out := make(map[string]Budget, len(v.NodePools))
	for name, pool := range v.NodePools {
		allowed, err := pool.AllowedDisruptionsByReason(v.Now, nodes[name], reason)
		if err != nil {
			allowed = 0
		}
		out[name] = Budget{
			Allowed: allowed, Disrupting: disrupting[name], Nodes: nodes[name], Err: err,
			Remaining: max(allowed-disrupting[name], 0),
		}
	}
	return out
}

func nodeReady(n *corev1.Node) bool {
	i := slices.IndexFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == corev1.NodeReady })
	return i >= 0 && n.Status.Conditions[i].Status == corev1.ConditionTrue
}

// remaining is a per-pool countdown of budget while a method picks candidates.
type remaining map[string]int

func remainingOf(budgets map[string]Budget) remaining {
	out := remaining{}
	for name, b := range budgets {
		out[name] = b.Remaining
	}
	return out
}

// take uses one unit of the pool's budget, reporting false when none is left.
func (r remaining) take(pool string) bool {
	if r[pool] <= 0 {
		return false
	}
	r[pool]--
	return true
}
