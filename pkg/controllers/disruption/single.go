package disruption

import (
	"context"
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
		if why == "" {
			return cmd, rejected, nil
		}
		rejected = append(rejected, Rejection{Candidate: c, Message: why})
	}
	return Command{}, rejected, nil
}
