package solver

import (
	"cmp"
	"math"
	"slices"
)

// Repacking bounds: how many bulk types are tried per pool, and how many of the most recently opened bins a
// pod is offered to before a new bin is opened.
const (
	repackCandidates = 8
	repackWindow     = 16
)

// repack re-plans, per NodePool, the new claims whose pods are free to go anywhere in the pool: pods
// placed without constraints of their own (swappable), that no topology or affinity group counts, on
// claims without minValues. Placing pods one by one, each where it adds least to the price, is myopic
// when pods are alike: a small type is always the cheapest next step, yet larger types cost less per
// pod because the per-node overhead is spread over more pods. So the pods are packed again, first fit
// decreasing into bins of each of a few candidate bulk types (the ones that hold the most pods per
// dollar), every bin then shrunk to the cheapest type that holds it; the cheapest packing replaces the
// claims when it costs less, or the same with fewer nodes, and stays within the pool's limits.
func (r *run) repack() {
	counted := map[string]bool{}
	for _, pool := range r.prep.pools {
		var movable []*target
		for _, c := range r.claims {
			if c.pool == pool && r.freeClaim(c, counted) {
				movable = append(movable, c)
			}
		}
		if len(movable) < 2 {
			continue
		}
		if bins, ok := r.bestPacking(pool, movable); ok {
			r.replaceClaims(pool, movable, bins)
		}
	}
}

// freeClaim reports whether every pod on the new claim may move to any other claim of its pool. Whether a
// group counts a pod depends only on its namespace and labels, so the answer is kept per signature.
func (r *run) freeClaim(c *target, counted map[string]bool) bool {
	if c.kind != kindNewClaim || c.hasMinValues || c.minValuesRelaxed || len(c.pods) == 0 {
		return false
	}
	for _, p := range c.pods {
		if !r.swappable(p) {
			return false
		}
	}
	if c.reqs.String() != c.pool.reqs.String() { // narrowed by a pod that has since moved, or pinned
		return false
	}
	for _, p := range c.pods {
		sig := p.swapClass()
		isCounted, seen := counted[sig]
		if !seen {
			isCounted = slices.ContainsFunc(r.prep.topo.groups, func(g *group) bool { return g.matches(p.pod.Namespace, p.pod.Labels) })
			counted[sig] = isCounted
		}
		if isCounted {
			return false
		}
	}
	return true
}

// bin is one node of a candidate packing.
type bin struct {
	used vec
	pods []*podInfo
	seqs []int
	cur  int // cheapest pool type holding used
}

// bestPacking returns the cheapest packing of the claims' pods into new bins, and whether it beats the
// claims as they are.
func (r *run) bestPacking(pool *poolInfo, claims []*target) ([]*bin, bool) {
	type placed struct {
		p   *podInfo
		seq int
	}
	var pods []placed
	oldPrice := 0.0
	oldCapacity := make(vec, len(r.prep.dims.names))
	for _, c := range claims {
		oldPrice += c.price()
		oldCapacity.addInPlace(c.capacity())
		for i, p := range c.pods {
			pods = append(pods, placed{p, c.seqs[i]})
		}
	}
	// Largest first; the binding order breaks ties so the packing is deterministic.
	slices.SortFunc(pods, func(a, b placed) int {
		return cmp.Or(cmp.Compare(b.p.requests[dimCPU], a.p.requests[dimCPU]),
			cmp.Compare(b.p.requests[dimMemory], a.p.requests[dimMemory]), cmp.Compare(a.seq, b.seq))
	})
	types := pool.types
	var best []*bin
	bestPrice := math.Inf(1)
	requests := make([]vec, len(pods))
	for i, pp := range pods {
		requests[i] = pp.p.requests
	}
	for _, bulk := range bulkTypes(pool, requests) {
		var bins []*bin
		fits := true
		for _, pp := range pods {
			target := -1
			for i := max(0, len(bins)-repackWindow); i < len(bins); i++ {
				if bins[i].used.fitsWith(pp.p.requests, types[bulk].alloc) {
					target = i
					break
				}
			}
			if target < 0 {
				b := &bin{used: make(vec, len(pp.p.requests))}
				if !b.used.fitsWith(pp.p.requests, types[bulk].alloc) {
					fits = false
					break
				}
				bins = append(bins, b)
				target = len(bins) - 1
			}
			b := bins[target]
			b.used.addInPlace(pp.p.requests)
			b.pods = append(b.pods, pp.p)
			b.seqs = append(b.seqs, pp.seq)
		}
		if !fits {
			continue
		}
		price := 0.0
		capacity := make(vec, len(oldCapacity))
		zero := make(vec, len(oldCapacity))
		for _, b := range bins {
			b.cur = fitNewType(types, 0, b.used, zero)
			price += types[b.cur].price
			capacity.addInPlace(types[b.cur].capacity)
		}
		if cheaperOrFewer(price, len(bins), bestPrice, len(best)) && r.withinPoolLimits(pool, oldCapacity, capacity) {
			best, bestPrice = bins, price
		}
	}
	if best == nil || !cheaperOrFewer(bestPrice, len(best), oldPrice, len(claims)) {
		return nil, false
	}
	return best, true
}

// cheaperOrFewer reports whether a plan of price and nodes beats one of otherPrice and otherNodes: it costs
// less, or the same on fewer nodes (less to launch, and the pods wait on fewer nodes to start).
func cheaperOrFewer(price float64, nodes int, otherPrice float64, otherNodes int) bool {
	return price < otherPrice-1e-9 || (price <= otherPrice+1e-9 && nodes < otherNodes)
}

// bulkTypes returns the indexes in pool.types of the types worth packing pods of these requests into:
// of the types holding the most average pods per dollar, one per number of pods held, the best
// repackCandidates of those the pods fill at least once, and the best of those that hold them all.
func bulkTypes(pool *poolInfo, requests []vec) []int {
	n := len(requests)
	total := make(vec, len(requests[0]))
	largest := make(vec, len(requests[0]))
	zero := make(vec, len(requests[0]))
	for _, req := range requests {
		total.addInPlace(req)
		for d := range req {
			largest[d] = max(largest[d], req[d])
		}
	}
	type candidate struct {
		index   int
		perPod  float64 // price per average pod
		holding int     // average pods a bin holds
	}
	best := map[int]candidate{}
	for i, t := range pool.types {
		if !zero.fitsWith(largest, t.alloc) {
			continue
		}
		holding := math.MaxInt
		for d := range total {
			if total[d] > 0 {
				room := float64(t.alloc[d]) / (float64(total[d]) / float64(n))
				holding = min(holding, int(room))
			}
		}
		if holding < 1 || holding == math.MaxInt {
			continue
		}
		// A type that holds them all costs its price, however many more it could hold.
		c := candidate{index: i, perPod: t.price / float64(min(holding, n)), holding: min(holding, n+1)}
		if prev, ok := best[c.holding]; !ok || c.perPod < prev.perPod-1e-12 {
			best[c.holding] = c
		}
	}
	var filled []candidate
	var whole *candidate
	for _, c := range best {
		if c.holding <= n {
			filled = append(filled, c)
		} else {
			whole = &c
		}
	}
	slices.SortFunc(filled, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.perPod, b.perPod), cmp.Compare(b.holding, a.holding))
	})
	var out []int
	for _, c := range filled[:min(len(filled), repackCandidates)] {
		out = append(out, c.index)
	}
	if whole != nil {
		out = append(out, whole.index)
	}
	return out
}

// withinPoolLimits reports whether the pool stays within its limits when claims of capacity removed are
// replaced by claims of capacity added.
func (r *run) withinPoolLimits(pool *poolInfo, removed, added vec) bool {
	if !pool.limited {
		return true
	}
	inUse := r.inUse[pool]
	for d, limited := range pool.hasLimit {
		if limited && added[d] > removed[d] && inUse[d]-removed[d]+added[d] > pool.limits[d] {
			return false
		}
	}
	return true
}

// replaceClaims swaps the pool's movable claims for the packed bins. The bins take over the claims' names
// in order, so a repacked plan names its claims the way a greedy one does.
func (r *run) replaceClaims(pool *poolInfo, old []*target, bins []*bin) {
	removed := map[*target]bool{}
	names := make([]string, 0, len(old))
	for _, c := range old {
		removed[c] = true
		names = append(names, c.name)
		r.inUse[pool] = subVec(r.inUse[pool], c.capacity())
	}
	r.claims = slices.DeleteFunc(r.claims, func(c *target) bool { return removed[c] })
	for i, b := range bins {
		name := ""
		if i < len(names) {
			name = names[i]
		} else {
			name = newClaimName(pool.name, r.perPool[pool])
			r.perPool[pool]++
		}
		// Each bin binds its pods in their original order.
		order := make([]int, len(b.pods))
		for j := range order {
			order[j] = j
		}
		slices.SortFunc(order, func(x, y int) int { return cmp.Compare(b.seqs[x], b.seqs[y]) })
		t := &target{id: len(r.nodes) + len(r.claims), name: name, kind: kindNewClaim, pool: pool, reqs: pool.reqs,
			taints: pool.taints, used: b.used}
		for _, j := range order {
			t.pods = append(t.pods, b.pods[j])
			t.seqs = append(t.seqs, b.seqs[j])
		}
		t.setTypes(pool.types)
		r.inUse[pool].addInPlace(t.capacity())
		r.claims = append(r.claims, t)
	}
}
