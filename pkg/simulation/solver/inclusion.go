package solver

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// nodeFilter is a spread's node inclusion policy for its pod: only pods on the nodes it includes count
// toward a domain, and only domains with an included node exist. nodeAffinityPolicy Honor (the default)
// includes the nodes that match the pod's node selector and required node affinity; nodeTaintsPolicy Honor
// includes the nodes whose NoSchedule and NoExecute taints the pod tolerates.
type nodeFilter struct {
	terms       []scheduling.Requirements // nil when node affinity is ignored
	tolerations []corev1.Toleration
	honorTaints bool
}

// includes reports whether the filter may include the target (possible) and whether it certainly does,
// whatever the target's requirements are narrowed to later (certain). Nodes and in-flight claims have
// fixed labels, so both answers agree; a new claim's labels are the values its requirements fix, which can
// only become more settled, so a claim possibly included now may be included in the plan, and one
// certainly included now stays included.
func (f *nodeFilter) includes(t *target) (possible, certain bool) {
	if f.honorTaints && scheduling.Tolerates(f.tolerations, t.taints, false) != nil {
		return false, false
	}
	if f.terms == nil {
		return true, true
	}
	for _, term := range f.terms {
		p, c := termIncludes(t, term)
		possible, certain = possible || p, certain || c
		if certain {
			return true, true
		}
	}
	return possible, certain
}

// termIncludes is includes for one node selector term.
func termIncludes(t *target, term scheduling.Requirements) (possible, certain bool) {
	if t.kind != kindNewClaim {
		for k, want := range term {
			v, ok := t.labels[k]
			if !want.Matches(v, ok) {
				return false, false
			}
		}
		return true, true
	}
	possible, certain = true, true
	for k, want := range term {
		have, ok := t.reqs[k]
		if !ok {
			certain = false // the label is unknown until a pod's requirements settle it
			continue
		}
		if !have.AllowsAbsent() && have.Len() == 1 {
			if v, ok := have.Any(); ok {
				if !want.Has(v) {
					return false, false
				}
				continue
			}
		}
		if !have.IsSubsetOf(want) {
			certain = false
		}
		if !want.AllowsAbsent() && !have.Intersects(want) {
			possible = false
		}
	}
	return possible, possible && certain
}

// prepareFilter sets the spread's node filter, or leaves it nil when every existing node, in-flight claim
// and NodePool is certainly included, so that the plain group counts apply (the common case).
func (prep *prepared) prepareFilter(p *podInfo, s *spreadConstraint) {
	f := nodeFilter{tolerations: p.tolerations, honorTaints: s.honorTaints}
	if s.honorAffinity {
		f.terms = p.selectorTerms
	}
	trivial := true
	for _, n := range prep.nodes {
		if _, certain := f.includes(n); !certain {
			trivial = false
			break
		}
	}
	for _, pool := range prep.pools {
		if !trivial {
			break
		}
		claim := target{kind: kindNewClaim, reqs: pool.reqs, taints: pool.taints}
		if _, certain := f.includes(&claim); !certain {
			trivial = false
		}
	}
	if trivial {
		return
	}
	filter := f // only a spread that keeps its filter allocates one
	s.filter = &filter
	if s.group.key != v1.LabelHostname {
		// Filtered counts are summed per target, so the group's counts are kept on each target too.
		s.group.perTarget = true
	}
}

// filteredCounts are a filtered spread's counts at one point of a run: per domain, the pods on targets the
// filter possibly includes, and the minimum over its universe of the pods on targets it certainly includes.
// Skew is checked against both, so that it holds however the claims' requirements settle.
type filteredCounts struct {
	seq      int // run.seq when computed
	byDomain map[string]int
	certain  map[string]int
	minimum  int
}

// spreadCount returns the count the spread sees in domain d of target t and the minimum it is compared
// with.
func (r *run) spreadCount(s *spreadConstraint, t *target, d string) (int, int) {
	if s.filter == nil || s.group.key == v1.LabelHostname {
		// A hostname spread's minimum is always 0, and the target's own count can only overstate what an
		// included node would count.
		return r.counts.count(s.group, t, d), s.minCount(r.counts)
	}
	fc := r.filtered(s)
	return fc.byDomain[d], fc.minimum
}

// filtered computes the spread's filtered counts, once per placed pod.
func (r *run) filtered(s *spreadConstraint) *filteredCounts {
	fc, ok := r.filteredBySpread[s]
	if ok && fc.seq == r.seq {
		return fc
	}
	if !ok {
		fc = &filteredCounts{byDomain: map[string]int{}, certain: map[string]int{}}
		if r.filteredBySpread == nil {
			r.filteredBySpread = map[*spreadConstraint]*filteredCounts{}
		}
		r.filteredBySpread[s] = fc
	}
	clear(fc.byDomain)
	clear(fc.certain)
	fc.seq = r.seq
	for _, targets := range [][]*target{r.nodes, r.claims} {
		for _, t := range targets {
			n := hostCount(t, s.group.id)
			if n == 0 {
				continue
			}
			d, ok := t.domain(s.group.key)
			if !ok {
				continue
			}
			possible, certain := s.filter.includes(t)
			if possible {
				fc.byDomain[d] += n
			}
			if certain {
				fc.certain[d] += n
			}
		}
	}
	fc.minimum = 0
	if len(s.universe) >= s.minDomains {
		lowest := math.MaxInt
		for _, d := range s.universe {
			lowest = min(lowest, fc.certain[d])
		}
		if lowest != math.MaxInt {
			fc.minimum = lowest
		}
	}
	return fc
}
