package solver

import (
	"fmt"
	"math"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// pin fixes a new claim's value for a topology key (for example its zone) so that topology counts are exact.
type pin struct{ key, value string }

// minCount is the smallest count of the spread's group over the domains eligible for the pod; 0 when fewer
// domains exist than minDomains, and always 0 for hostname (a new node can always be added).
func (s *spreadConstraint) minCount(gc *groupCounts) int {
	if s.group.key == v1.LabelHostname || len(s.universe) < s.minDomains {
		return 0
	}
	lowest := math.MaxInt
	for _, d := range s.universe {
		lowest = min(lowest, gc.count(s.group, nil, d))
	}
	if lowest == math.MaxInt {
		return 0
	}
	return lowest
}

// allows reports whether the pod, under the attempt, may go to domain d of key. With explain set it also
// returns why not.
func (r *run) allows(p *podInfo, att *attempt, t *target, key, d string, explain bool) (bool, string) {
	for _, s := range att.spreads {
		if s.group.key != key {
			continue
		}
		self := 0
		if s.selfMatch {
			self = 1
		}
		count, minimum := r.spreadCount(s, t, d)
		if skew := count + self - minimum; skew > s.maxSkew {
			if !explain {
				return false, ""
			}
			return false, fmt.Sprintf("topology spread on %s: %s=%s would have skew %d > maxSkew %d", key, key, d, skew, s.maxSkew)
		}
	}
	for _, a := range att.affinities {
		if a.group.key != key {
			continue
		}
		count := r.counts.count(a.group, t, d)
		switch {
		case a.anti && count > 0:
			if !explain {
				return false, ""
			}
			return false, fmt.Sprintf("pod anti-affinity on %s: %s=%s already has %d matching pods", key, key, d, count)
		case !a.anti && count == 0 && (r.counts.nonZero[a.group.id] > 0 || !a.selfMatch):
			if !explain {
				return false, ""
			}
			return false, fmt.Sprintf("pod affinity on %s: %s=%s has no matching pod", key, key, d)
		}
	}
	if att.host && !r.inHost(att, key, d) {
		if !explain {
			return false, ""
		}
		return false, fmt.Sprintf("%s=%s is not the host domain of the pod's topology spread", key, d)
	}
	if att.settle {
		if ok, why := r.settled(p, t, key, d, att.avoid, explain); !ok {
			return false, why
		}
	}
	for _, g := range p.blockedBy {
		if g.key == key && r.counts.count(g, t, d) > 0 {
			if !explain {
				return false, ""
			}
			return false, fmt.Sprintf("anti-affinity of %d pods on %s=%s selects this pod", r.counts.count(g, t, d), key, d)
		}
	}
	return true, ""
}

// constrainsKey reports whether the attempt has a constraint (not mere group membership) on key.
func constrainsKey(p *podInfo, att *attempt, key string) bool {
	for _, s := range att.spreads {
		if s.group.key == key {
			return true
		}
	}
	for _, a := range att.affinities {
		if a.group.key == key {
			return true
		}
	}
	for _, g := range p.blockedBy {
		if g.key == key {
			return true
		}
	}
	return false
}

// topologyFit checks every topology key of the pod against target t whose requirements would be reqs. For
// new claims with several possible values of a key it picks one (fewest matching pods, then name) and
// returns it as a pin. The reason is empty when the pod fits; it is only built when explain is set.
func (r *run) topologyFit(p *podInfo, att *attempt, t *target, reqs scheduling.Requirements, explain bool) ([]pin, bool, string) {
	var pins []pin
	if ok, why := r.keyFit(p, att, t, reqs, v1.LabelHostname, explain, &pins); !ok {
		return nil, false, why
	}
	for _, key := range p.pinKeys {
		if ok, why := r.keyFit(p, att, t, reqs, key, explain, &pins); !ok {
			return nil, false, why
		}
	}
	return pins, true, ""
}

func (r *run) keyFit(p *podInfo, att *attempt, t *target, reqs scheduling.Requirements, key string, explain bool, pins *[]pin) (bool, string) {
	constrained := constrainsKey(p, att, key)
	if key == v1.LabelHostname && !constrained {
		// Only the hostname spreads of other pods, which this pod may join, can refuse it here.
		if d, ok := t.domain(key); ok && att.settle {
			return r.settled(p, t, key, d, false, explain)
		}
		return true, ""
	}
	var single string
	var found bool
	switch {
	case key == v1.LabelHostname || t.kind == kindNode:
		single, found = t.domain(key)
	default:
		if rq, ok := reqs[key]; ok && rq.Len() == 1 && !rq.AllowsAbsent() {
			single, found = rq.Any()
		}
	}
	if found {
		return r.allows(p, att, t, key, single, explain)
	}
	candidates := []string(nil)
	if t.kind == kindNewClaim {
		candidates = t.pool.domainValues(key, reqs)
	}
	if len(candidates) == 0 {
		if !constrained {
			return true, ""
		}
		if !explain {
			return false, ""
		}
		return false, fmt.Sprintf("no value for topology key %s", key)
	}
	best, bestScore, lastWhy := "", math.MaxInt, ""
	for _, d := range candidates {
		ok, why := r.allows(p, att, t, key, d, explain)
		if !ok {
			lastWhy = why
			continue
		}
		score := 0
		for _, s := range att.spreads {
			if s.group.key == key {
				count, _ := r.spreadCount(s, t, d)
				score += count
			}
		}
		for _, g := range p.memberOf {
			if g.key == key {
				score += r.counts.count(g, t, d)
			}
		}
		if score < bestScore {
			best, bestScore = d, score
		}
	}
	if bestScore == math.MaxInt {
		return false, lastWhy
	}
	*pins = append(*pins, pin{key: key, value: best})
	return true, ""
}

// record counts a placed pod in every group it belongs to and, for the anti-affinity terms it was placed
// under, as an owner.
func (r *run) record(p *podInfo, t *target, att *attempt) {
	for _, g := range p.memberOf {
		if d, ok := t.domain(g.key); ok {
			r.counts.record(g, t, d)
		}
	}
	if att == nil {
		return
	}
	r.recordSpreadHosts(t, att.spreads, false)
	for _, a := range att.affinities {
		if a.owners != nil {
			if d, ok := t.domain(a.owners.key); ok {
				r.counts.record(a.owners, t, d)
			}
		}
	}
}
