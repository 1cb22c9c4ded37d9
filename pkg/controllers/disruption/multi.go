package disruption

import (
	"context"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"time"
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
// whose pods could fit in the remaining free capacity at all (feasiblePrefix), then binary-searches the
// longest prefix, of at least two, that one simulation says can be removed: a prefix that works makes the search
// look longer, one that doesn't shorter; each probe is one Solve. No rejections are reported: a node
// left out here is tried again, with its own reasons, by single-node consolidation.
func (m *MultiNodeConsolidation) Compute(ctx context.Context, v *View, budgets map[string]Budget, candidates []*Candidate) (Command, []Rejection, error) {
	left := remainingOf(budgets)
	var allowed []*Candidate
	for _, c := range candidates {
		if left.take(c.NodePool.Name) {
			allowed = append(allowed, c)
		}
	}
	allowed = allowed[:feasiblePrefix(v, allowed)]
	if len(allowed) < 2 {
		return Command{}, nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, MultiNodeTimeout)
	defer cancel()
	sim := newSimulator(v, m.SolverOptions, allowed)
	var best Command
	lo, hi := 2, len(allowed)
	for lo <= hi {
		mid := (lo + hi) / 2
		plan, err := sim.simulate(ctx, allowed[:mid])
		if err != nil {
			if ctx.Err() != nil {
				break // keep the best found so far
			}
			return Command{}, nil, err
		}
		if cmd, why := m.evaluate(allowed[:mid], plan, m.ConsolidationType()); why == "" {
			best, lo = cmd, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best, nil, nil
}
