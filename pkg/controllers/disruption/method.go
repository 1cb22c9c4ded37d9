package disruption

import (
	"context"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// Decisions a command carries out.
const (
	DecisionDelete  = "delete"
	DecisionReplace = "replace"
)

// Command is a decision: remove the candidates, after launching the replacements (if any) and waiting
// for them to initialize.
type Command struct {
	Reason            v1.DisruptionReason
	ConsolidationType string
	Candidates        []*Candidate
	Replacements      []solver.NodeClaimPlan
	// SavingsPerHour is the candidates' price minus the replacements'.
	SavingsPerHour float64
	// Moves are the consolidation moves scored on the way to this decision, approved or not (metrics and
	// ConsolidationApproved events); an empty command may carry them too.
	Moves []Move
	// TimedOut says the method's search ran out of time (karpenter_voluntary_disruption_consolidation_
	// timeouts_total); the command is the best found by then, possibly none.
	TimedOut bool
}

// Decision is DecisionDelete or DecisionReplace; "" for an empty command.
func (c *Command) Decision() string {
	switch {
	case len(c.Candidates) == 0:
		return ""
	case len(c.Replacements) == 0:
		return DecisionDelete
	}
	return DecisionReplace
}

// Rejection is a candidate a method considered and did not disrupt, with the reason for an
// Unconsolidatable event.
type Rejection struct {
	Candidate *Candidate
	Message   string
}

// Method is one way of choosing nodes to disrupt. Methods are tried in order each pass; the first that
// returns a command wins.
type Method interface {
	// Reason is the disruption reason (budgets and metrics).
	Reason() v1.DisruptionReason
	// ConsolidationType is "empty", "single", "multi", or "" for drift (metric label, as upstream).
	ConsolidationType() string
	// Class says whether do-not-disrupt and PDBs block the method's candidates.
	Class() Class
	// ShouldDisrupt says whether the method acts on the candidate; a non-empty message explains a no
	// worth an Unconsolidatable event.
	ShouldDisrupt(c *Candidate) (bool, string)
	// Compute decides on the candidates the method should disrupt (in the loop's order), within the
	// remaining budgets. A command with no candidates means nothing to do.
	Compute(ctx context.Context, v *View, budgets map[string]Budget, candidates []*Candidate) (Command, []Rejection, error)
	// Validates says whether a command of this method waits the validation delay and is checked again
	// before it is carried out.
	Validates() bool
}
