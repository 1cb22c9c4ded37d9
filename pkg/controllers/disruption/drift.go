package disruption

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// Drift replaces nodes whose NodeClaim has the Drifted condition: drifted nodes with nothing to
// reschedule are deleted together; otherwise the first drifted node whose pods fit gets its replacements
// launched first (as many as the simulation needs) and is removed once they are initialized.
type Drift struct {
	SolverOptions solver.Options
}

func (Drift) Reason() v1.DisruptionReason { return v1.DisruptionReasonDrifted }
func (Drift) ConsolidationType() string   { return "" }
func (Drift) Class() Class                { return Eventual }
func (Drift) Validates() bool             { return false }

// ShouldDisrupt takes candidates of dynamic pools whose NodeClaim is Drifted (StaticDrift has the static
// pools').
func (Drift) ShouldDisrupt(c *Candidate) (bool, string) {
	return c.NodePool.Spec.Replicas == nil && meta.IsStatusConditionTrue(c.NodeClaim.Status.Conditions, v1.ConditionTypeDrifted), ""
}

// Compute deletes the empty drifted candidates the budgets allow, or else replaces the first one whose
// pods fit.
func (d Drift) Compute(ctx context.Context, v *View, budgets map[string]Budget, candidates []*Candidate) (Command, []Rejection, error) {
	cmd := Command{Reason: d.Reason()}
	left := remainingOf(budgets)
	for _, c := range candidates {
		if len(c.ReschedulablePods) == 0 && left.take(c.NodePool.Name) {
			cmd.Candidates = append(cmd.Candidates, c)
		}
	}
	if len(cmd.Candidates) > 0 {
		return cmd, nil, nil
	}
	var rejected []Rejection
	for _, c := range candidates {
		if left[c.NodePool.Name] <= 0 {
			continue
		}
		plan, err := simulate(ctx, v, d.SolverOptions, []*Candidate{c})
		if err != nil {
			return Command{}, rejected, err
		}
		if len(plan.Unschedulable) > 0 {
			rejected = append(rejected, Rejection{Candidate: c, Message: "pods would not fit: " + plan.Unschedulable[0].Pod.String()})
			continue
		}
		cmd.Candidates, cmd.Replacements = []*Candidate{c}, plan.NodeClaims
		return cmd, rejected, nil
	}
	return Command{}, rejected, nil
}
