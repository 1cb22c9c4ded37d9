package solver

import (
	"fmt"
	"slices"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// A plan holds in the order it was made: each pod with a hard topology spread is placed within its skew
// counting the pods placed before it. The kube-scheduler binds the planned pods in an order of its own and
// checks the spread against the pods bound by then. A pod that the spread's selector matches, placed later
// into the spread pod's domain, can leave that domain over the skew once everything is bound; the
// kube-scheduler then fails the spread pod's hint whenever it comes to it after that pod, and sends it
// elsewhere or back to provisioning. So a pending pod that joins the group of a hard spread of another
// pending pod is placed, in this order of preference:
//   - away (not from hostname spreads): in no domain where such a spread is placed, or, when the group has a
//     host domain (spread_hosts.go), not in that one. Then no binding order can put that domain ahead
//     through this pod: even final counts within the skew are passed on the way by orders that bind one
//     domain's pods first, and the kube-scheduler refuses the spread pod at that moment;
//   - settled: where every such spread already placed stays within its skew once every pod is bound; for a
//     group with a host, every such spread in the host;
//   - anywhere its own constraints allow, as the kube-scheduler would place the pod anywhere.
//
// Over hostnames the least count is that of any node without the group's pods, zero, in every binding
// order, so settled is as safe as away there: a hostname spread pod (maxSkew 1) that its selector does not
// match gets at most one such pod beside it, one it matches none. Beyond that the kube-scheduler refuses it
// its node in any order, and sooner still, as it first counts the pods nominated to the node as if they ran
// there (in Karpenter's diverse mix, 8 of the 200 hostname spreads of a 1,000-pod plan had more, and 5 to
// 14 hostname spread pods per 1,000-pod run ended off their hint).
//
// A spread pod placed outside its group's host (a stray: the host refused it, as it joins another group
// hosted there) is not settled around. Keeping the group's pods out of the stray's domain as well gathered
// them in the one domain left, and the host's spreads, which are nearly all of them, ended within a pod or
// two of their skew: in a 1,000-pod diverse plan 85 of a group's 100 pods went to one zone, and 70 of the
// 200 zone spreads could take no more than three more of their pods in their zone. Any such pod the
// kube-scheduler then bound into the host off its plan failed them all. The stray alone may fail instead.
//
// Looking away costs a scan of the open claims; it stops after awayRefusals claims refuse the pod and
// the pod is settled instead, so that a pod of a spread group costs about what any other pod does.
//
// A pod an earlier plan put on a node or in-flight claim, and that the kube-scheduler has not bound yet
// (awaitsBinding), is as exposed: the kube-scheduler checks its spreads when it comes to it. Its hard
// non-hostname spreads count as placed in its target's domain, so the pods of a later pass settle around them
// too. Without that, a later pass put the pods a waiting spread counts into its zone (in one 1,000-pod run,
// 62 of the 200 zone spreads ended over their skew if bound last, as their pods were hinted). Its hostname
// spreads are not kept settled by later passes: runs that settled those too had more zone spreads fail, but
// they were made before the strays fix above, so whether that was the cause is not known.

// spreadHost is where the pods of one group's hard spreads are placed: the spread whose counts are
// compared, and by domain the least maxSkew of the spreads placed there.
type spreadHost struct {
	spread *spreadConstraint
	skew   map[string]int
}

// markSettling sets settleFirst on the pending pods that join the group of a hard spread of a pending pod,
// or of a hard non-hostname spread of a pod waiting on a node or in-flight claim for the kube-scheduler
// (awaitsBinding).
func (prep *prepared) markSettling() {
	spread := map[*group]bool{}
	for _, p := range prep.pods {
		for _, s := range p.spreads {
			if s.settles() {
				spread[s.group] = true
			}
		}
	}
	for _, i := range prep.waiting {
		for _, s := range prep.bound[i].spreads {
			if s.settlesAcrossPasses() {
				spread[s.group] = true
			}
		}
	}
	if len(spread) == 0 {
		return
	}
	prep.chooseSpreadHosts(spread)
	for _, p := range prep.pods {
		for _, g := range p.memberOf {
			if spread[g] {
				p.settleFirst = len(p.tries) > 0
				break
			}
		}
	}
}

// awaitsBinding reports whether a pod the input lists on a node or in-flight claim is only planned there: an
// earlier plan put it there, and the kube-scheduler has yet to bind it and check its spreads. Its hard
// spreads are kept settled like those of a pod this plan places (recordWaitingSpreads).
func awaitsBinding(p *podInfo) bool { return p.pod.Spec.NodeName == "" }

// recordWaitingSpreads records the hard non-hostname spreads of the pods waiting on their target for the
// kube-scheduler, as placed in their target's domain.
func (r *run) recordWaitingSpreads() {
	for _, i := range r.prep.waiting {
		r.recordSpreadHosts(r.nodes[r.prep.boundOn[i]], r.prep.bound[i].spreads, true)
	}
}

// settles reports whether the pods of the same pass settle around the spread: whether it is hard.
func (s *spreadConstraint) settles() bool { return !s.soft }

// settlesAcrossPasses reports whether the pods of later passes settle around the spread while its pod waits
// for the kube-scheduler, and whether its group may get a host domain: it settles, and not over hostnames.
func (s *spreadConstraint) settlesAcrossPasses() bool {
	return s.settles() && s.group.key != v1.LabelHostname
}

// recordSpreadHosts records the domain of t for each hard spread a pod placed there is under; for a pod
// waiting there (an earlier plan's), for each of them that settles across passes.
func (r *run) recordSpreadHosts(t *target, spreads []*spreadConstraint, waiting bool) {
	for _, s := range spreads {
		if !s.settles() || (waiting && !s.settlesAcrossPasses()) {
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
// d, of a group the pod joins, within its skew; with avoid, whether no such spread is placed in d at all. A
// group with a host domain counts only there (its strays are not settled around).
// The reason is built only with explain.
func (r *run) settled(p *podInfo, t *target, key, d string, avoid, explain bool) (bool, string) {
	if avoid && r.hostsSpreadOf(p, key, d) {
		if !explain {
			return false, ""
		}
		return false, fmt.Sprintf("a pending pod on %s=%s has a hard topology spread that counts this pod", key, d)
	}
	if r.spreadHosts == nil {
		return true, ""
	}
	for _, g := range p.memberOf {
		if g.key != key {
			continue
		}
		if host, ok := r.prep.hostOf(g); ok && host != d {
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

// canAvoid reports whether, for every group the pod joins with a hard spread placed, some domain the spread
// counts holds none of the group's spreads yet; otherwise the away attempt cannot succeed.
func (r *run) canAvoid(p *podInfo) bool {
	for _, g := range p.memberOf {
		if !g.awayMatters() {
			continue
		}
		var h *spreadHost
		if r.spreadHosts != nil {
			h = r.spreadHosts[g.id]
		}
		if h == nil {
			continue
		}
		if !slices.ContainsFunc(h.spread.universe, func(d string) bool { return !r.hosts(g, d) }) {
			return false
		}
	}
	return true
}

// hosts reports whether domain d of g's key hosts a hard spread of group g: it is the group's host domain,
// or, for a group without one, a spread of the group is placed there.
func (r *run) hosts(g *group, d string) bool {
	if h, ok := r.prep.hostOf(g); ok {
		return h == d
	}
	if r.spreadHosts == nil || r.spreadHosts[g.id] == nil {
		return false
	}
	_, placed := r.spreadHosts[g.id].skew[d]
	return placed
}

// awayMatters reports whether the pods of the group keep away from the domains of its hard spreads, rather
// than only within their skew: not over hostnames, where the least count the kube-scheduler compares with is
// that of any node without such a pod, zero, whatever the binding order, so within the skew is enough.
func (g *group) awayMatters() bool { return g.key != v1.LabelHostname }

// hostsSpreadOf reports whether a hard spread of a group the pod joins, one its pods keep away from, is
// placed in domain d of key.
func (r *run) hostsSpreadOf(p *podInfo, key, d string) bool {
	for _, g := range p.memberOf {
		if g.key != key || !g.awayMatters() {
			continue
		}
		if r.hosts(g, d) {
			return true
		}
	}
	return false
}

// nearSpreads reports whether target t is in a domain where a hard spread of a group the pod joins is
// placed; a target whose domain is not settled yet is not.
func (r *run) nearSpreads(p *podInfo, t *target) bool {
	for _, g := range p.memberOf {
		if d, ok := t.domain(g.key); ok && r.hostsSpreadOf(p, g.key, d) {
			return true
		}
	}
	return false
}
