package disruption

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Emptiness deletes consolidatable nodes that hold nothing to reschedule, all at once within budgets.
type Emptiness struct{}

func (Emptiness) Reason() v1.DisruptionReason { return v1.DisruptionReasonEmpty }
func (Emptiness) ConsolidationType() string   { return "empty" }
func (Emptiness) Class() Class                { return Graceful }
func (Emptiness) Validates() bool             { return true }

// ShouldDisrupt takes empty candidates whose pool consolidates (both policies include empty nodes) and
// whose Consolidatable condition is True.
func (Emptiness) ShouldDisrupt(c *Candidate) (bool, string) {
	if c.NodePool.Spec.Replicas != nil || c.NodePool.Spec.Disruption.ConsolidateAfter.IsNever() || !c.Empty() {
		return false, ""
	}
	return meta.IsStatusConditionTrue(c.NodeClaim.Status.Conditions, v1.ConditionTypeConsolidatable), ""
}

// Compute deletes every candidate its pool's budget allows.
func (e Emptiness) Compute(_ context.Context, _ *View, budgets map[string]Budget, candidates []*Candidate) (Command, []Rejection, error) {
	left := remainingOf(budgets)
	cmd := Command{Reason: e.Reason(), ConsolidationType: e.ConsolidationType()}
	for _, c := range candidates {
		if left.take(c.NodePool.Name) {
			cmd.Candidates = append(cmd.Candidates, c)
			cmd.SavingsPerHour += c.Price
		}
	}
	return cmd, nil, nil
}
