package solver

import (
	"math"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

type targetKind int

const (
	kindNode targetKind = iota
	kindInFlight
	kindNewClaim
)

// target is somewhere pods can go: an existing node, an in-flight NodeClaim or a new NodeClaim being planned.
type target struct {
	id     int
	name   string
	kind   targetKind
	pool   *poolInfo
	reqs   scheduling.Requirements // node labels for nodes; requirements for claims
	labels map[string]string       // existing nodes only
	// cordoned nodes (unschedulable or being deleted) take no new pods.
	cordoned bool
	taints   []corev1.Taint
	used     vec
	alloc    vec // fixed for nodes and in-flight claims
	ports    []hostPort
	pods     []*podInfo
	seqs     []int
	// hostCounts is the per-group pod count on this target for hostname-keyed and perTarget groups, by
	// group id.
	hostCounts []int32

	// New claims only.
	types            []pricedType // compatible with reqs, cheapest first
	cur              int          // index of the cheapest type that fits used
	maxAlloc         vec
	minValuesRelaxed bool
	hasMinValues     bool
	// eligibleIn has bit i set while the claim is in the run's eligible list i (eligible.go).
	eligibleIn uint64
}

// price is what a new claim costs now (its cheapest fitting type).
func (t *target) price() float64 {
	if t.kind != kindNewClaim || t.cur >= len(t.types) {
		return 0
	}
	return t.types[t.cur].price
}

// capacity is what the claim counts against its pool's limits.
func (t *target) capacity() vec { return t.types[t.cur].capacity }

// slack is the cpu left in the current type (or node), the key open claims are sorted by.
func (t *target) slack() int64 {
	if t.kind == kindNewClaim {
		return t.types[t.cur].alloc[dimCPU] - t.used[dimCPU]
	}
	return t.alloc[dimCPU] - t.used[dimCPU]
}

// domain returns the target's value for a topology key, and whether it has exactly one.
func (t *target) domain(key string) (string, bool) {
	if key == v1.LabelHostname {
		if t.labels != nil {
			if h, ok := t.labels[key]; ok {
				return h, true
			}
		}
		return t.name, true
	}
	if t.kind == kindNode {
		v, ok := t.labels[key]
		return v, ok
	}
	r, ok := t.reqs[key]
	if !ok || r.Len() != 1 || r.AllowsAbsent() {
		return "", false
	}
	return r.Any()
}

func portsConflict(have, want []hostPort) (hostPort, bool) {
	for _, w := range want {
		for _, h := range have {
			if h.conflicts(w) {
				return w, true
			}
		}
	}
	return hostPort{}, false
}

// fitNewType returns the index of the first type at or after from that fits used+extra, or -1. When
// used+extra needs a resource only some types offer, only those types are tried; otherwise blocks whose
// largest type can't hold used+extra are skipped whole. Either way the result is the same as trying every
// type.
func fitNewType(types []pricedType, from int, used, extra vec) int {
	return fitTypeBelow(types, from, used, extra, math.Inf(1))
}

// fitTypeBelow is fitNewType giving up (-1) once types cost limit or more: lists are sorted by price.
func fitTypeBelow(types []pricedType, from int, used, extra vec, limit float64) int {
	if from >= len(types) {
		return -1
	}
	if l := types[0].list; l != nil && l.n == len(types) {
		if o := l.scarcest(used, extra); o != nil {
			// Only the types before end cost less than limit.
			end := len(o.prices)
			if limit <= o.prices[end-1] {
				end = sort.SearchFloat64s(o.prices, limit)
			}
			if end == 0 || !used.fitsWith(extra, o.maxAllocUpTo(end-1)) {
				return -1
			}
			start := sort.SearchInts(o.positions, from)
			for k := start; k < end; k++ {
				if (k == start || k%offeredBlock == 0) && !used.fitsWith(extra, o.maxAllocOfBlock(k)) {
					k = (k/offeredBlock+1)*offeredBlock - 1 // on to the next block
					continue
				}
				if used.fitsWith(extra, o.alloc(k)) {
					return o.positions[k]
				}
			}
			return -1
		}
	}
	for i := from; i < len(types); {
		t := &types[i]
		if t.price >= limit {
			return -1
		}
		if t.blockMax != nil && !used.fitsWith(extra, t.blockMax) {
			i += t.blockRest
			continue
		}
		if used.fitsWith(extra, t.alloc) {
			return i
		}
		i++
	}
	return -1
}

// setTypes replaces a claim's type list and recomputes cur and maxAlloc. It returns false when no type fits.
func (t *target) setTypes(types []pricedType) bool {
	t.types = types
	if len(types) > 0 && types[0].list != nil && types[0].list.n == len(types) {
		t.maxAlloc = types[0].list.maxAlloc // shared, never written
	} else {
		t.maxAlloc = make(vec, len(t.used))
		for _, ty := range types {
			t.maxAlloc = maxVec(t.maxAlloc, ty.alloc)
		}
	}
	zero := make(vec, len(t.used))
	t.cur = fitNewType(types, 0, t.used, zero)
	return t.cur >= 0
}

func newClaimName(pool string, n int) string { return pool + "-" + strconv.Itoa(n) }
