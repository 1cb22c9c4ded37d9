package disruption

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
)

// StaticDrift replaces drifted nodes of static NodePools (spec.replicas), as upstream's StaticDrift: each
// gets a fresh claim from the pool's template (provisioning.StaticNodeClaimPlan), launched first, within
// the pool's Drifted budget and limits.nodes, and not while the pool has more nodes than its replicas (its
// scale-down comes first).
type StaticDrift struct{}

func (StaticDrift) Reason() v1.DisruptionReason { return v1.DisruptionReasonDrifted }
func (StaticDrift) ConsolidationType() string   { return "" }
func (StaticDrift) Class() Class                { return Eventual }
func (StaticDrift) Validates() bool             { return false }

// ShouldDisrupt takes candidates of static pools whose NodeClaim is Drifted.
func (StaticDrift) ShouldDisrupt(c *Candidate) (bool, string) {
	return c.NodePool.Spec.Replicas != nil && meta.IsStatusConditionTrue(c.NodeClaim.Status.Conditions, v1.ConditionTypeDrifted), ""
}

// Compute replaces as many drifted static nodes as the budgets and node limits allow, one replacement
// each, in one command.
func (d StaticDrift) Compute(_ context.Context, v *View, budgets map[string]Budget, candidates []*Candidate) (Command, []Rejection, error) {
	cmd := Command{Reason: d.Reason()}
	left := remainingOf(budgets)
	counts := staticCounts(v)
	launched := map[string]int{}
	var rejected []Rejection
	for _, c := range candidates {
		pool := c.NodePool
		if counts[pool.Name] > int(*pool.Spec.Replicas) {
			continue
		}
		// A replacement holds a node of the limit until its candidate is gone.
		if limit, ok := pool.Spec.Limits[v1.ResourceNodes]; ok && counts[pool.Name]+launched[pool.Name] >= int(limit.Value()) {
			rejected = append(rejected, Rejection{Candidate: c, Message: "limits.nodes leaves no room for a replacement"})
			continue
		}
		if !left.take(pool.Name) {
			continue
		}
		plan, err := provisioning.StaticNodeClaimPlan(pool, v.InstanceTypes[pool.Name])
		if err != nil {
			rejected = append(rejected, Rejection{Candidate: c, Message: err.Error()})
			continue
		}
		launched[pool.Name]++
		cmd.Candidates = append(cmd.Candidates, c)
		cmd.Replacements = append(cmd.Replacements, plan)
	}
	return cmd, rejected, nil
}

// staticCounts is, per static pool, its NodeClaims (joined or in flight) that are neither being deleted nor
// marked for deletion.
func staticCounts(v *View) map[string]int {
	out := map[string]int{}
	for _, n := range v.Snapshot.Nodes {
		if n.NodeClaim != nil && !n.MarkedForDeletion && n.NodeClaim.DeletionTimestamp == nil {
			out[n.NodePool]++
		}
	}
	for _, f := range v.Snapshot.InFlight {
		if !f.MarkedForDeletion && f.NodeClaim.DeletionTimestamp == nil {
			out[f.NodePool]++
		}
	}
	return out
}
