package solver

import (
	"cmp"
	"slices"
	"strings"
)

// swapCandidates bounds how many partner pods are tried for each pod in the improvement pass.
const swapCandidates = 48

// swappable reports whether a placed pod can trade places with another pod of the same signature without
// changing any constraint: it was placed without topology or affinity terms of its own, binds no host
// port and adds no node requirement to its claim.
func (r *run) swappable(p *podInfo) bool {
	att, ok := r.lastAtt[p]
	if !ok || len(att.spreads) > 0 || len(att.affinities) > 0 || len(p.ports) > 0 || len(p.blockedBy) > 0 {
		return false
	}
	for _, t := range att.terms {
		if len(t) > 0 {
			return false
		}
	}
	return true
}

// swapSignature groups pods that are interchangeable for every topology count: same namespace, same
// labels, same tolerations.
func swapSignature(p *podInfo) string {
	var b strings.Builder
	b.WriteString(p.pod.Namespace)
	keys := make([]string, 0, len(p.pod.Labels))
	for k := range p.pod.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteString("\x00" + k + "=" + p.pod.Labels[k])
	}
	for _, t := range p.tolerations {
		b.WriteString("\x01" + t.Key + string(t.Operator) + t.Value + string(t.Effect))
	}
	return b.String()
}

// swapClass is the pod's swapSignature, as prepare listed it for pending pods.
func (p *podInfo) swapClass() string {
	if p.signature == "" { // not listed (or really empty: then computing it gives "" again)
		return swapSignature(p)
	}
	return p.signature
}

// swapMargin keeps the price caps of trySwap's searches from ruling out a type on rounding alone.
const swapMargin = 1e-6

// covers reports whether a is at least b in every resource.
func covers(a, b vec) bool {
	for i := range a {
		if a[i] < b[i] {
			return false
		}
	}
	return true
}

type slot struct {
	claim *target
	index int // position in claim.pods
}

// improve swaps interchangeable pods between new claims of the same pool whenever that lets the two claims
// run on cheaper types together. Swapped pods keep each other's binding sequence numbers, and because
// they have the same labels every topology count stays the same at every step of the binding order; they
// have no constraints of their own, so the plan stays valid.
func (r *run) improve() {
	classes := map[string][]slot{}
	var names []string
	for _, c := range r.claims {
		if c.hasMinValues {
			continue
		}
		for i, p := range c.pods {
			if !r.swappable(p) {
				continue
			}
			sig := c.pool.name + "\x02" + p.swapClass()
			if _, ok := classes[sig]; !ok {
				names = append(names, sig)
			}
			classes[sig] = append(classes[sig], slot{claim: c, index: i})
		}
	}
	slices.Sort(names)
	for _, name := range names {
		slots := classes[name]
		// Pair large pods with small ones: sorting by cpu puts likely partners at the two ends.
		slices.SortStableFunc(slots, func(a, b slot) int {
			pa, pb := a.claim.pods[a.index], b.claim.pods[b.index]
			return cmp.Or(cmp.Compare(pb.requests[dimCPU], pa.requests[dimCPU]), cmp.Compare(pb.requests[dimMemory], pa.requests[dimMemory]))
		})
		for i := range slots {
			for j, tried := len(slots)-1, 0; j > i && tried < swapCandidates; j, tried = j-1, tried+1 {
				if slots[i].claim != slots[j].claim && r.trySwap(slots[i], slots[j]) {
					break
				}
			}
		}
	}
}

// trySwap exchanges the pods in two slots when both claims then fit types that cost less in total.
func (r *run) trySwap(a, b slot) bool {
	ca, cb := a.claim, b.claim
	pa, pb := ca.pods[a.index], cb.pods[b.index]
	if pa.requests[dimCPU] == pb.requests[dimCPU] && pa.requests[dimMemory] == pb.requests[dimMemory] {
		return false
	}
	// Pricing uses scratch vectors; only an accepted swap allocates.
	if r.scratch == nil {
		r.scratch = make([]vec, 3)
		for i := range r.scratch {
			r.scratch[i] = make(vec, len(ca.used))
		}
	}
	newA, newB, zero := r.scratch[0], r.scratch[1], r.scratch[2]
	for i := range newA {
		newA[i] = ca.used[i] - pa.requests[i] + pb.requests[i]
		newB[i] = cb.used[i] - pb.requests[i] + pa.requests[i]
	}
	// A swap pays only if the two new types cost less than the two current ones, so one claim at least
	// must fit a type cheaper than its current one. Searches are capped by price (the lists are sorted by
	// price): first among the types cheaper than each claim's current one, then, for a claim that has none,
	// among the types the other claim's saving could pay for (with a margin for rounding). Each search
	// finds the first type that fits, as an uncapped one would, or shows that the swap can't pay.
	// A claim whose pod is swapped for one at least as large in every resource can't get cheaper: no type
	// cheaper than its current one held its pods before.
	total := ca.price() + cb.price()
	ia, ib := -1, -1
	if !covers(pb.requests, pa.requests) {
		ia = fitTypeBelow(ca.types, 0, newA, zero, ca.price())
	}
	if !covers(pa.requests, pb.requests) {
		ib = fitTypeBelow(cb.types, 0, newB, zero, cb.price())
	}
	switch {
	case ia < 0 && ib < 0:
		return false
	case ia < 0:
		ia = fitTypeBelow(ca.types, 0, newA, zero, total-cb.types[ib].price+swapMargin)
	case ib < 0:
		ib = fitTypeBelow(cb.types, 0, newB, zero, total-ca.types[ia].price+swapMargin)
	}
	if ia < 0 || ib < 0 || ca.types[ia].price+cb.types[ib].price >= total-1e-9 {
		return false
	}
	if pool := ca.pool; pool.limited { // both claims are from the same pool
		inUse := r.inUse[pool]
		for i, limited := range pool.hasLimit {
			after := inUse[i] - ca.capacity()[i] - cb.capacity()[i] + ca.types[ia].capacity[i] + cb.types[ib].capacity[i]
			if limited && after > pool.limits[i] {
				return false
			}
		}
	}
	newA, newB = newA.clone(), newB.clone()
	r.inUse[ca.pool].addInPlace(subVec(ca.types[ia].capacity, ca.capacity()))
	r.inUse[cb.pool].addInPlace(subVec(cb.types[ib].capacity, cb.capacity()))
	ca.used, cb.used = newA, newB
	ca.cur, cb.cur = ia, ib
	ca.pods[a.index], cb.pods[b.index] = pb, pa
	return true
}
