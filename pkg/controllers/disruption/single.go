package disruption

import (
	"context"
	"fmt"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"time"
)

// SingleNodeTimeout bounds one single-node consolidation pass (upstream: 3 minutes); candidates not
// reached are left for the next pass.
const SingleNodeTimeout = 3 * time.Minute

// SingleNodeConsolidation removes or replaces one node at a time, cheapest to disrupt first.
type SingleNodeConsolidation struct{ consolidation }

// NewSingleNodeConsolidation returns the method; spotToSpot is the SpotToSpotConsolidation gate.
func NewSingleNodeConsolidation(spotToSpot bool, opts solver.Options) *SingleNodeConsolidation {
	return &SingleNodeConsolidation{consolidation{SpotToSpot: spotToSpot, SolverOptions: opts}}
}

func (*SingleNodeConsolidation) ConsolidationType() string { return "single" }

// Compute tries the candidates one by one (in the order given: by disruption cost) and returns the first
// that can be deleted, or replaced by a cheaper node; every candidate tried and kept gets a rejection.
func (s *SingleNodeConsolidation) Compute(ctx context.Context, v *View, budgets map[string]Budget, candidates []*Candidate) (Command, []Rejection, error) {
	ctx, cancel := context.WithTimeout(ctx, SingleNodeTimeout)
	defer cancel()
	var rejected []Rejection
	var moves []Move
	totals := balancedTotals(v)
	// The first candidate is simulated from scratch; the nodes are prepared once for the rest, only if it
	// stays.
	sim := &simulator{v: v, opts: s.SolverOptions}
	for i, c := range candidates {
		if budgets[c.NodePool.Name].Remaining <= 0 {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		if ok, sc := canPass(totals, c); !ok {
			rejected = append(rejected, Rejection{Candidate: c, Message: "Balanced consolidation: even deleting the node would not pay for its disruption: " + sc.String()})
			continue
		}
		if !sim.prepared && len(rejected) > 0 {
			sim.prepare(candidates[i:])
		}
		plan, err := sim.simulate(ctx, []*Candidate{c})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return Command{}, rejected, err
		}
		cmd, why := s.evaluate([]*Candidate{c}, plan, s.ConsolidationType())
		if why != "" {
			rejected = append(rejected, Rejection{Candidate: c, Message: why})
			continue
		}
		approved, scored := scoreCommand(totals, cmd)
		moves = append(moves, scored...)
		if approved {
			cmd.Moves = moves
			return cmd, rejected, nil
		}
		rejected = append(rejected, Rejection{Candidate: c, Message: fmt.Sprintf("Balanced consolidation: %s %s would not pay for its disruption: %s",
			cmd.Decision(), c.Name(), rejectedScore(scored))})
	}
	return Command{Moves: moves, TimedOut: ctx.Err() == context.DeadlineExceeded}, rejected, nil
}
