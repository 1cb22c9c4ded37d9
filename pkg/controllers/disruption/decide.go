package disruption

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// Methods returns the disruption methods in upstream's order. Consolidation and emptiness skip static
// pools; their drifted nodes are StaticDrift's.
func Methods(spotToSpot bool, opts solver.Options) []Method {
	return []Method{
		Emptiness{},
		StaticDrift{},
		Drift{SolverOptions: opts},
		NewMultiNodeConsolidation(spotToSpot, opts),
		NewSingleNodeConsolidation(spotToSpot, opts),
	}
}

// Trial is what one method saw and decided in a pass.
type Trial struct {
	Method Method
	// Eligible counts the candidates the method would act on.
	Eligible int
	// Budgets are the pools' budgets for the method's reason.
	Budgets map[string]Budget
	// Command is the decision; it has no candidates when the method found nothing to do.
	Command Command
	// Rejections and BudgetBlocked explain candidates the method considered and kept.
	Rejections    []Rejection
	BudgetBlocked []Blocked
	// Moves are the consolidation moves the method scored (karpenter_consolidation_moves_total).
	Moves []Move
	// Duration is how long the method took to decide (for the evaluation duration metric only).
	Duration time.Duration
}

// Outcome is a pass: the methods tried in order until one decided, and the nodes nothing may disrupt.
type Outcome struct {
	Trials  []Trial
	Blocked []Blocked
	Invalid []InvalidAnnotation
}

// Decided returns the trial that produced a command, or nil.
func (o Outcome) Decided() *Trial {
	if n := len(o.Trials); n > 0 && o.Trials[n-1].Command.Decision() != "" {
		return &o.Trials[n-1]
	}
	return nil
}

// Decide runs the methods in order over the view and stops at the first that returns a command. The
// nodes are sorted into candidates once per Class, or once in all when the Class can't change the result.
func Decide(ctx context.Context, v *View, methods []Method) (Outcome, error) {
	var out Outcome
	type sorted struct {
		cands   []*Candidate
		blocked []Blocked
		invalid []InvalidAnnotation
	}
	byClass := map[Class]sorted{}
	classless := !classMatters(v)
	for _, m := range methods {
		s, ok := byClass[m.Class()]
		if !ok {
			if classless { // the other class's sorting, if built, is this one's
				for _, built := range byClass {
					s, ok = built, true
				}
			}
			if !ok {
				s.cands, s.blocked, s.invalid = Candidates(v, m.Class())
			}
			byClass[m.Class()] = s
			out.Invalid = s.invalid
			if m.Class() == Graceful {
				out.Blocked = s.blocked
			}
		}
		cands := s.cands
		start := time.Now()
		trial, err := try(ctx, v, m, cands)
		trial.Duration = time.Since(start)
		out.Trials = append(out.Trials, trial)
		if err != nil {
			return out, err
		}
		if trial.Command.Decision() != "" {
			return out, nil
		}
	}
	return out, nil
}

// classMatters reports whether sorting the nodes into candidates can depend on the Class: only a claim
// with a terminationGracePeriod is treated differently by eventual disruption.
func classMatters(v *View) bool {
	for _, n := range v.Snapshot.Nodes {
		if n.NodeClaim != nil && n.NodeClaim.Spec.TerminationGracePeriod != nil {
			return true
		}
	}
	return false
}

// try runs one method over the candidates it should disrupt, cheapest to disrupt first.
func try(ctx context.Context, v *View, m Method, all []*Candidate) (Trial, error) {
	t := Trial{Method: m, Budgets: Budgets(v, m.Reason())}
	var cands []*Candidate
	for _, c := range all {
		ok, why := m.ShouldDisrupt(c)
		if why != "" {
			t.Rejections = append(t.Rejections, Rejection{Candidate: c, Message: why})
		}
		if !ok {
			continue
		}
		cands = append(cands, c)
		if b := t.Budgets[c.NodePool.Name]; b.Remaining <= 0 {
			t.BudgetBlocked = append(t.BudgetBlocked, Blocked{Node: c.Node, NodeClaim: c.NodeClaim, Reason: budgetMessage(c.NodePool, m.Reason(), b)})
		}
	}
	t.Eligible = len(cands)
	if len(cands) == 0 {
		return t, nil
	}
	SortByDisruptionCost(cands)
	cmd, rejected, err := m.Compute(ctx, v, t.Budgets, cands)
	t.Command, t.Rejections, t.Moves = cmd, append(t.Rejections, rejected...), cmd.Moves
	return t, err
}

// SortByDisruptionCost orders candidates cheapest to disrupt first (ties by node name, so that the
// order is stable).
func SortByDisruptionCost(cands []*Candidate) {
	slices.SortStableFunc(cands, func(a, b *Candidate) int {
		return cmp.Or(cmp.Compare(a.DisruptionCost, b.DisruptionCost), cmp.Compare(a.Name(), b.Name()))
	})
}

func budgetMessage(pool *v1.NodePool, reason v1.DisruptionReason, b Budget) string {
	if b.Err != nil {
		return fmt.Sprintf("NodePool %s has a disruption budget that cannot be read, so no %s disruptions are allowed: %v", pool.Name, reason, b.Err)
	}
	return fmt.Sprintf("NodePool %s's disruption budgets allow %d %s disruptions of %d nodes and %d are already disrupting",
		pool.Name, b.Allowed, reason, b.Nodes, b.Disrupting)
}

// Rechecker is a method whose commands are checked again, against a fresh view, before they run.
type Rechecker interface {
	// Recheck decides again for exactly these candidates (fresh from the new view); a non-empty message
	// says why the command no longer holds.
	Recheck(ctx context.Context, v *View, cands []*Candidate) (Command, string, error)
}

// Validate re-checks a command decided validation-delay ago against a fresh view: every candidate must
// still be one the method would disrupt, the budgets must still allow them, and the method must reach
// the same decision for them. It returns the command to carry out (rebuilt from the fresh view), or why
// the command is dropped.
func Validate(ctx context.Context, v *View, m Method, cmd Command) (Command, string, error) {
	fresh, _, _ := Candidates(v, m.Class())
	byID := map[string]*Candidate{}
	for _, c := range fresh {
		byID[c.ProviderID] = c
	}
	left := remainingOf(Budgets(v, m.Reason()))
	var cands []*Candidate
	for _, old := range cmd.Candidates {
		c := byID[old.ProviderID]
		if c == nil {
			return Command{}, fmt.Sprintf("node %s is no longer a disruption candidate", old.Name()), nil
		}
		if ok, _ := m.ShouldDisrupt(c); !ok {
			return Command{}, fmt.Sprintf("node %s is no longer eligible for %s", c.Name(), m.Reason()), nil
		}
		if !left.take(c.NodePool.Name) {
			return Command{}, fmt.Sprintf("NodePool %s's budget no longer allows disrupting node %s", c.NodePool.Name, c.Name()), nil
		}
		cands = append(cands, c)
	}
	r, ok := m.(Rechecker)
	if !ok {
		out := cmd
		out.Candidates = cands
		return out, "", nil
	}
	again, why, err := r.Recheck(ctx, v, cands)
	if err != nil || why != "" {
		return Command{}, why, err
	}
	if again.Decision() != cmd.Decision() || len(again.Replacements) > len(cmd.Replacements) {
		return Command{}, fmt.Sprintf("the decision changed from %s to %s", cmd.Decision(), again.Decision()), nil
	}
	return again, "", nil
}

// Recheck simulates the candidates' removal again.
func (s *SingleNodeConsolidation) Recheck(ctx context.Context, v *View, cands []*Candidate) (Command, string, error) {
	return s.recheck(ctx, v, cands, s.ConsolidationType())
}

// Recheck simulates the candidates' removal again.
func (m *MultiNodeConsolidation) Recheck(ctx context.Context, v *View, cands []*Candidate) (Command, string, error) {
	return m.recheck(ctx, v, cands, m.ConsolidationType())
}

func (m consolidation) recheck(ctx context.Context, v *View, cands []*Candidate, typ string) (Command, string, error) {
	plan, err := simulate(ctx, v, m.SolverOptions, cands)
	if err != nil {
		return Command{}, "", err
	}
	cmd, why := m.evaluate(cands, plan, typ)
	if why != "" {
		return cmd, why, nil
	}
	if approved, moves := scoreCommand(balancedTotals(v), cmd); !approved {
		return Command{}, fmt.Sprintf("Balanced consolidation: the move no longer pays for its disruption: %s", rejectedScore(moves)), nil
	}
	return cmd, "", nil
}
