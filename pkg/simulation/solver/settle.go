package solver

import (
	"fmt"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// A plan holds in the order it was made: each pod with a hard topology spread is placed within its skew
// counting the pods placed before it. The kube-scheduler binds the planned pods in an order of its own and
// checks the spread against the pods bound by then. A pod that the spread's selector matches, placed later
// into the spread pod's domain, can leave that domain over the skew once everything is bound; the
// kube-scheduler then fails the spread pod's hint whenever it comes to it after that pod, and sends it
// elsewhere or back to provisioning. So a pending pod that joins the group of a hard spread of another
// pending pod (not a hostname spread: there the least count is almost always zero) is first placed where
// every such spread already placed stays within its skew, and only if that fits nowhere, anywhere its own
// constraints allow: the settled plan is a preference, as the kube-scheduler lets the pod go anywhere.

// spreadHost is where the pods of one group's hard spreads are placed: the spread whose counts are
// compared, and by domain the least maxSkew of the spreads placed there.
type spreadHost struct {
	spread *spreadConstraint
	skew   map[string]int
}

// markSettling sets settleFirst on the pending pods that join the group of a hard non-hostname spread of a
// pending pod.
func (prep *prepared) markSettling() {
	spread := map[*group]bool{}
	for _, p := range prep.pods {
		for _, s := range p.spreads {
			if !s.soft && s.group.key != v1.LabelHostname {
				spread[s.group] = true
			}
		}
	}
	if len(spread) == 0 {
		return
	}
	for _, p := range prep.pods {
		for _, g := range p.memberOf {
			if spread[g] {
				p.settleFirst = len(p.tries) > 0
				break
			}
		}
	}
}

// recordSpreadHosts records, for each hard non-hostname spread the pod was placed under, the domain of t.
func (r *run) recordSpreadHosts(t *target, att *attempt) {
	for _, s := range att.spreads {
		if s.soft || s.group.key == v1.LabelHostname {
			continue
		}
		d, ok := t.domain(s.group.key)
		if !ok {
			continue
		}
		if r.spreadHosts == nil {
			r.spreadHosts = make([]*spreadHost, len(r.prep.topo.groups))
		}
		h := r.spreadHosts[s.group.id]
		if h == nil {
			h = &spreadHost{spread: s, skew: map[string]int{}}
			r.spreadHosts[s.group.id] = h
		}
		if skew, ok := h.skew[d]; !ok || s.maxSkew < skew {
			h.skew[d] = s.maxSkew
		}
	}
}

// settled reports whether adding the pod to domain d of key on target t keeps every hard spread placed in
// d, of a group the pod joins, within its skew; the reason is built only with explain.
func (r *run) settled(p *podInfo, t *target, key, d string, explain bool) (bool, string) {
	if r.spreadHosts == nil {
		return true, ""
	}
	for _, g := range p.memberOf {
		if g.key != key {
			continue
		}
		h := r.spreadHosts[g.id]
		if h == nil {
			continue
		}
		skew, ok := h.skew[d]
		if !ok {
			continue
		}
		count, minimum := r.spreadCount(h.spread, t, d)
		if count+1-minimum > skew {
			if !explain {
				return false, ""
			}
			return false, fmt.Sprintf("topology spread of pods placed on %s=%s would end over maxSkew %d", key, d, skew)
		}
	}
	return true, ""
}
