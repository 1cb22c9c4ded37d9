package solver

import "math"

// The scan of open claims for a pod: which claims are looked at, in what order, and how far.

// growthCandidates bounds how many claims that would have to grow are priced on each side of the scan
// start, so that a pod costs about the same whatever the number of open claims.
const growthCandidates = 16

// bestOpenClaim scans claims with enough cpu slack from the tightest up, stopping at the first that holds
// the pod at no extra cost. Claims that would have to grow are only priced for a bounded number of
// candidates on each side of the scan start, which keeps a pod's cost near constant in the claim count.
// Claims its hostname limits rule out are never visited, and neither are blocks of claims without room
// once growth is no longer priced, so that the scan doesn't grow with claims it can't use either. A scan that
// keeps the pod away from spreads (settle.go) stops after awayRefusals refusals, and reports it was cut.
func (r *run) bestOpenClaim(p *podInfo, att *attempt) (best claimChoice, found, cut bool) {
	refused := 0
	// refuse counts a claim evaluate refused and reports whether an avoiding scan must stop there.
	refuse := func() bool {
		refused++
		cut = (att.avoid || att.host) && refused > awayRefusals
		return cut
	}
	consider := func(c *target) bool {
		if (att.avoid && r.nearSpreads(p, c)) || (att.host && r.outsideHost(att, c)) {
			refuse()
			return false // settled or inHost would refuse it; checked here, it spares the claim's evaluation
		}
		choice, ok := r.evaluate(p, att, c)
		if !ok {
			refuse()
			return false
		}
		if !found || choice.cost < best.cost-1e-12 {
			best, found = choice, true
		}
		return true
	}
	// Only claims that may take the pod under its hostname limits are scanned; the others would be refused
	// by evaluate, and a refusal doesn't end the scan or count toward its bounds.
	list := r.scanList(p, att)
	start := list.firstWithSlack(p.requests[dimCPU])
	grown, free := 0, 0
	var bestFree claimChoice
	bestResidual := math.Inf(1)
	for pos := start; list.valid(pos) && free < freeCandidates; pos = list.next(pos) {
		if grown >= growthCandidates {
			// Claims without room are no longer priced, so whole blocks of them are skipped; otherwise a
			// pod that fits nowhere as is would walk every claim.
			if pos = list.skipFull(pos, p.requests); !list.valid(pos) {
				break
			}
		}
		c := list.at(pos)
		if (att.avoid && r.nearSpreads(p, c)) || (att.host && r.outsideHost(att, c)) {
			if refuse() {
				break
			}
			continue
		}
		if c.used.fitsWith(p.requests, c.types[c.cur].alloc) {
			choice, ok := r.evaluate(p, att, c)
			if !ok {
				if refuse() {
					break
				}
				continue
			}
			if choice.cost > 1e-12 {
				if !found || choice.cost < best.cost-1e-12 {
					best, found = choice, true
				}
				continue
			}
			free++
			// Among claims with free room, prefer the one the pod leaves most evenly filled (smallest
			// leftover cpu and memory, each as a share of the node), so that cpu-heavy pods go where
			// memory is short and the other way round.
			if residual := leftoverNorm(c, p.requests); residual < bestResidual-1e-12 {
				bestFree, bestResidual = choice, residual
			}
			continue
		}
		if grown < growthCandidates && consider(c) {
			grown++
		}
		if cut {
			break
		}
	}
	if free > 0 {
		return bestFree, true, false
	}
	grown = 0
	for pos, ok := list.prev(start); ok && grown < growthCandidates && !cut; pos, ok = list.prev(pos) {
		if consider(list.at(pos)) {
			grown++
		}
	}
	return best, found, cut
}

// awayRefusals bounds how many claims may refuse a pod being kept away from spreads (settle.go), those in a
// spread's domain included, before the scan stops and the pod is placed under its settling attempt instead:
// a preference is not worth a walk over every claim for each pod of a spread group.
const awayRefusals = 256

// freeCandidates bounds how many claims with free room for a pod are compared before choosing one.
const freeCandidates = 8

// leftoverNorm is the squared length of the cpu and memory a claim's current type would have left after
// adding extra, each as a fraction of the type's allocatable.
func leftoverNorm(c *target, extra vec) float64 {
	alloc := c.types[c.cur].alloc
	norm := 0.0
	for _, d := range []int{dimCPU, dimMemory} {
		if alloc[d] > 0 {
			left := float64(alloc[d]-c.used[d]-extra[d]) / float64(alloc[d])
			norm += left * left
		}
	}
	return norm
}
