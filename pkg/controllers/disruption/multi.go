package disruption

import (
	"context"
	"time"

	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// MultiNodeTimeout bounds one multi-node consolidation pass (upstream: 1 minute).
const MultiNodeTimeout = time.Minute

// MultiNodeConsolidation removes the largest prefix of candidates that can go at once with at most one
// cheaper replacement.
type MultiNodeConsolidation struct{ consolidation }

// NewMultiNodeConsolidation returns the method; spotToSpot is the SpotToSpotConsolidation gate.
func NewMultiNodeConsolidation(spotToSpot bool, opts solver.Options) *MultiNodeConsolidation {
	return &MultiNodeConsolidation{consolidation{SpotToSpot: spotToSpot, SolverOptions: opts}}
}

func (*MultiNodeConsolidation) ConsolidationType() string { return "multi" }

// Compute takes the candidates (in the order given) that budgets allow, cuts them to the longest prefix
// whose pods could fit in the remaining free capacity at all (feasiblePrefix, and slotPrefix when the pods
// are all of one size), then searches the longest prefix, of at least two, that one simulation says can be
// removed, each probe being one Solve over nodes prepared once (simulator). The search starts at that
// bound, where the answer usually is, steps down from the shortest prefix known to fail in doubling steps
// until one works, then bisects the last step. Were removability monotone in the prefix length this would
// find the longest removable prefix, as bisecting the whole range would, in far fewer probes when the
// bound is close; it is not quite (with pods of mixed sizes a prefix may need two new nodes where a longer
// one needs one), so either search can miss a longer prefix. No rejections are reported: a node left out
// here is tried again, with its own reasons, by single-node consolidation.
func (m *MultiNodeConsolidation) Compute(ctx context.Context, v *View, budgets map[string]Budget, candidates []*Candidate) (Command, []Rejection, error) {
	left := remainingOf(budgets)
	var allowed []*Candidate
	for _, c := range candidates {
		if left.take(c.NodePool.Name) {
			allowed = append(allowed, c)
		}
	}
	needs, each, uniform := demands(allowed)
	allowed = allowed[:feasiblePrefix(v, allowed, needs)]
	if uniform {
		allowed = allowed[:slotPrefix(v, allowed, each)]
	}
	if len(allowed) < 2 {
		return Command{}, nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, MultiNodeTimeout)
	defer cancel()
	sim := newSimulator(v, m.SolverOptions, allowed)
	totals := balancedTotals(v)
	var best Command
	var lastRejected []Move
	// try simulates the prefix of length k and keeps its command when it works (and, in Balanced pools,
	// pays for its disruption).
	try := func(k int) (bool, error) {
		plan, err := sim.simulate(ctx, allowed[:k])
		if err != nil {
			return false, err
		}
		cmd, why := m.evaluate(allowed[:k], plan, m.ConsolidationType())
		if why != "" {
			return false, nil
		}
		approved, moves := scoreCommand(totals, cmd)
		if !approved {
			lastRejected = moves
			return false, nil
		}
		cmd.Moves = moves
		best = cmd
		return true, nil
	}
	// finish returns the search's outcome. Only it counts as a move: its command, or else the last move
	// scoring rejected (upstream counts once per search, not once per probe).
	finish := func(cmd Command, err error) (Command, []Rejection, error) {
		cmd, _, err = m.done(ctx, cmd, err)
		if cmd.Decision() == "" && lastRejected != nil {
			cmd = Command{Moves: lastRejected}
		}
		cmd.TimedOut = ctx.Err() == context.DeadlineExceeded
		return cmd, nil, err
	}
	// The longest prefix works, or a step down from the shortest known to fail, doubling each time, does.
	failed := len(allowed)
	if ok, err := try(failed); err != nil || ok {
		return finish(best, err)
	}
	var lo, hi int // the answer is in [lo-1, hi]: lo-1 works, hi+1 doesn't
	for step := 1; ; step *= 2 {
		k := max(failed-step, 2)
		ok, err := try(k)
		if err != nil {
			return finish(best, err)
		}
		if ok {
			lo, hi = k+1, failed-1
			break
		}
		if k == 2 {
			return finish(Command{}, nil)
		}
		failed = k
	}
	for lo <= hi {
		mid := (lo + hi) / 2
		ok, err := try(mid)
		if err != nil {
			return finish(best, err)
		}
		if ok {
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	return finish(best, nil)
}

// done returns the best command found; after an error, only when the pass ran out of time.
func (m *MultiNodeConsolidation) done(ctx context.Context, best Command, err error) (Command, []Rejection, error) {
	if err == nil || ctx.Err() != nil {
		return best, nil, nil
	}
	return Command{}, nil, err
}
