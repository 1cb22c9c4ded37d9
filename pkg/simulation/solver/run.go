package solver

import (
	"context"
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// run is the mutable state of one packing attempt.
type run struct {
	prep     *prepared
	nodes    []*target // copies of prep.nodes
	claims   []*target // new claims in creation order
	open     claimList
	inUse    map[*poolInfo]vec
	seq      int
	unplaced []*podInfo
	lastAtt  map[*podInfo]attempt
	perPool  map[*poolInfo]int
	counts   *groupCounts
	scratch  []vec // reusable vectors for the improvement pass
	// planTypes is claimPlan's reusable list of the types within the pool's limits.
	planTypes []pricedType
	// typeCache holds instance types priced under narrowed requirements, by pool and requirements.
	typeCache map[string][]pricedType
	// instanceTypeReqs holds the instance-type requirements of planned claims, by their names joined.
	instanceTypeReqs map[string]scheduling.Requirement
	// eligible holds, in creation order, the open claims that meet each hostname limit pods have asked
	// about (eligible.go); eligibleByKey finds them.
	eligible      []*eligibleList
	eligibleByKey map[hostLimit]*eligibleList
	// leastRequests is, per resource, the least any pod placeAll places requests; the first fullNodes
	// nodes can't hold that much.
	leastRequests vec
	fullNodes     int
	// filteredBySpread holds the counts of spreads with a node filter (inclusion.go).
	filteredBySpread map[*spreadConstraint]*filteredCounts
	// spreadHosts holds, by group id, where the group's hard spreads are placed (settle.go); nil until one is.
	spreadHosts []*spreadHost
	// earlierOnly limits placement to the pod's earlier place (placeEarlier).
	earlierOnly bool
}

func newRun(prep *prepared) *run {
	r := &run{prep: prep, counts: newGroupCounts(len(prep.topo.groups)), inUse: map[*poolInfo]vec{}, lastAtt: map[*podInfo]attempt{}, perPool: map[*poolInfo]int{}}
	r.open = newClaimList(r.claimByID)
	for _, pool := range prep.pools {
		r.inUse[pool] = prep.poolUsage[pool].clone()
	}
	// The copies and their usage vectors are carved out of two allocations rather than two per node.
	copies, dims := make([]target, len(prep.nodes)), len(prep.dims.names)
	used := make(vec, len(prep.nodes)*dims)
	r.nodes = make([]*target, len(prep.nodes))
	for i, n := range prep.nodes {
		c := &copies[i]
		*c = *n
		c.id = i // a Base's variant shares the Base's targets, numbered in the Base
		c.used = used[i*dims : (i+1)*dims : (i+1)*dims]
		copy(c.used, n.used)
		c.ports, c.pods, c.seqs, c.hostCounts = slices.Clone(n.ports), nil, nil, nil
		r.nodes[i] = c
	}
	for i, p := range prep.bound {
		r.record(p, r.nodes[prep.boundOn[i]], &attempt{affinities: p.affinities})
	}
	r.recordWaitingSpreads()
	return r
}

func (r *run) placeAll(ctx context.Context, pods []*podInfo) error {
	if len(pods) > 0 {
		r.leastRequests = slices.Clone(pods[0].requests)
		for _, p := range pods[1:] {
			for d, amount := range p.requests {
				r.leastRequests[d] = min(r.leastRequests[d], amount)
			}
		}
	}
	if r.prep.keeping {
		return r.placeKeeping(ctx, pods)
	}
	for i, p := range pods {
		if err := checkEvery(ctx, i); err != nil {
			return err
		}
		if p.invalid != nil || !r.place(p) {
			r.unplaced = append(r.unplaced, p)
		}
	}
	return nil
}

// checkEvery returns the context's error every 256th pod.
func checkEvery(ctx context.Context, i int) error {
	if i%256 == 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("solving, %w", err)
		}
	}
	return nil
}

// place tries each relaxation of the pod's preferences until one fits. A pod whose hard spread has a host
// domain is first tried there (spread_hosts.go); a pod that joins a hard spread placed before it, or one
// with a host domain, is first tried with its strictest attempt settling that spread: away from its domains
// if it can, else within its skew (settle.go).
func (r *run) place(p *podInfo) bool {
	atts := p.tries
	if atts == nil {
		atts = p.attempts(r.prep.opts.PreferencePolicy)
	}
	if p.hostedSpread {
		hosted := atts[0]
		hosted.host, hosted.settle = true, p.settleFirst
		if r.placeUnder(p, hosted) {
			return true
		}
	}
	if p.settleFirst && (r.spreadHosts != nil || r.prep.hosts != nil) {
		settled := atts[0]
		settled.settle = true
		if r.canAvoid(p) {
			away := settled
			away.avoid = true
			if r.placeUnder(p, away) {
				return true
			}
		}
		if r.placeUnder(p, settled) {
			return true
		}
	}
	for _, att := range atts {
		if r.placeUnder(p, att) {
			return true
		}
	}
	return false
}

// placeUnder puts the pod on an existing node or in-flight claim, else on a claim, under one attempt.
func (r *run) placeUnder(p *podInfo, att attempt) bool {
	if r.placeOnNode(p, &att) {
		return true // lastAtt is only read for pods on new claims and unplaced pods
	}
	if r.earlierOnly {
		return false
	}
	r.lastAtt[p] = att
	return r.placeOnClaim(p, &att)
}

// placeOnNode puts the pod on the first existing node or in-flight claim that can hold it; while placeEarlier
// runs, only on the pod's earlier place.
func (r *run) placeOnNode(p *podInfo, att *attempt) bool {
	if r.earlierOnly {
		if n := r.nodes[p.earlier-1]; r.nodeRejection(p, att, n, false) == "" {
			r.commit(p, att, n)
			return true
		}
		return false
	}
	// Nodes only fill up while pods are placed, so a leading node that is cordoned or can't hold even the
	// least any pod requests never takes a pod again: it is skipped for good.
	for r.fullNodes < len(r.nodes) {
		if n := r.nodes[r.fullNodes]; !n.cordoned && n.used.fitsWith(r.leastRequests, n.alloc) {
			break
		}
		r.fullNodes++
	}
	for _, n := range r.nodes[r.fullNodes:] {
		if r.nodeRejection(p, att, n, false) == "" {
			r.commit(p, att, n)
			return true
		}
	}
	return false
}

// nodeRejection says why the pod can't go on an existing node or in-flight claim ("" when it can). Without
// explain the reason is only a non-empty marker.
func (r *run) nodeRejection(p *podInfo, att *attempt, n *target, explain bool) string {
	switch {
	case n.cordoned:
		return "cordoned or being deleted"
	case !n.used.fitsWith(p.requests, n.alloc):
		if !explain {
			return "x"
		}
		need := n.used.clone()
		need.addInPlace(p.requests)
		return "insufficient " + string(r.prep.dims.names[need.firstExceeded(n.alloc)])
	}
	if port, conflict := portsConflict(n.ports, p.ports); conflict {
		return "host port " + port.String() + " in use"
	}
	if err := scheduling.Tolerates(p.tolerations, n.taints, att.preferNoSchedule); err != nil {
		return err.Error()
	}
	if !anyTermMatches(att.terms, n.reqs) {
		return "node labels don't match the pod's node selector or affinity"
	}
	if _, ok, why := r.topologyFit(p, att, n, n.reqs, explain); !ok {
		if why == "" {
			why = "x"
		}
		return why
	}
	return ""
}

func anyTermMatches(terms []scheduling.Requirements, nodeReqs scheduling.Requirements) bool {
	for _, t := range terms {
		if nodeReqs.Compatible(t, scheduling.CompatibilityOptions{}) == nil {
			return true
		}
	}
	return false
}

// commit records the pod on a node or claim whose state (requirements, type) is already updated.
func (r *run) commit(p *podInfo, att *attempt, t *target) {
	if t.pods == nil && t.kind != kindNewClaim {
		room := r.room(t)
		t.pods, t.seqs = make([]*podInfo, 0, room), make([]int, 0, room)
	}
	t.used.addInPlace(p.requests)
	t.ports = append(t.ports, p.ports...)
	t.pods = append(t.pods, p)
	t.seqs = append(t.seqs, r.seq)
	r.seq++
	r.record(p, t, att)
}

// room is how many more pods the existing node or in-flight claim can take in this run: no more than its
// free amount of each resource over the least any pod placeAll places requests (every pod requests one
// "pods"). It sizes the target's pod list once instead of growing it pod by pod.
func (r *run) room(t *target) int {
	if r.leastRequests == nil {
		return 1
	}
	room := int64(math.MaxInt64)
	for d, least := range r.leastRequests {
		if least > 0 {
			room = min(room, (t.alloc[d]-t.used[d])/least)
		}
	}
	return int(min(max(room, 1), 1024))
}

// claimChoice is a priced way to put a pod on a new claim.
type claimChoice struct {
	claim   *target
	merged  scheduling.Requirements // nil when the claim's requirements don't change
	pins    []pin
	typeIdx int // index in claim.types (unchanged requirements) or -1 (re-price after the change)
	cost    float64
	// relaxMinValues marks the claim as launched without its minValues (BestEffort policy).
	relaxMinValues bool
	// filterPorts marks a pod whose host ports DaemonSets hold on some of the claim's types.
	filterPorts bool
}

// placeOnClaim puts the pod on the open claim where it adds least to the price, or on a new claim when
// that is cheaper.
func (r *run) placeOnClaim(p *podInfo, att *attempt) bool {
	best, found, cut := r.bestOpenClaim(p, att)
	if found && best.cost <= 1e-12 { // nothing is cheaper than free room
		r.apply(p, att, best)
		return true
	}
	if cut {
		return false // an avoiding scan stopped before it saw every open claim: a new claim may be a waste
	}
	fresh, freshOK := r.newClaim(p, att)
	switch {
	case found && (!freshOK || best.cost <= fresh.cost+1e-9):
		r.apply(p, att, best)
		return true
	case freshOK:
		r.claims = append(r.claims, fresh.claim)
		r.perPool[fresh.claim.pool]++
		r.inUse[fresh.claim.pool].addInPlace(fresh.claim.capacity())
		r.commit(p, att, fresh.claim)
		r.openInsert(fresh.claim)
		return true
	}
	return false
}

// evaluate prices putting the pod on an open claim, or reports that it can't go there. A pod's required node
// affinity terms are alternatives: each is tried and the cheapest way wins. Requirements are only
// materialised (merged) when a term narrows them; topology pins stay a list until apply, so that pricing
// the common case allocates nothing.
func (r *run) evaluate(p *podInfo, att *attempt, c *target) (claimChoice, bool) {
	if !c.used.fitsWith(p.requests, c.maxAlloc) {
		return claimChoice{}, false
	}
	if _, conflict := portsConflict(c.ports, p.ports); conflict {
		return claimChoice{}, false
	}
	if len(c.taints) > 0 && scheduling.Tolerates(p.tolerations, c.taints, att.preferNoSchedule) != nil {
		return claimChoice{}, false
	}
	if len(att.terms) == 1 {
		return r.evaluateTerm(p, att, c, att.terms[0])
	}
	var best claimChoice
	found := false
	for _, term := range att.terms {
		if choice, ok := r.evaluateTerm(p, att, c, term); ok && (!found || choice.cost < best.cost-1e-12) {
			best, found = choice, true
		}
	}
	return best, found
}

// evaluateTerm prices putting the pod on an open claim under one of its node affinity terms.
func (r *run) evaluateTerm(p *podInfo, att *attempt, c *target, term scheduling.Requirements) (claimChoice, bool) {
	merged, ok := mergeTerm(c.reqs, term, r.prep.compat)
	if !ok {
		return claimChoice{}, false
	}
	reqs := c.reqs
	if merged != nil {
		reqs = merged
	}
	pins, ok, _ := r.topologyFit(p, att, c, reqs, false)
	if !ok {
		return claimChoice{}, false
	}
	// DaemonSets holding one of the pod's host ports rule out their types.
	var ports []hostPort
	if len(p.ports) > 0 && c.pool.daemonPorts {
		ports = p.ports
	}
	choice := claimChoice{claim: c, merged: merged, pins: pins, typeIdx: -1, filterPorts: ports != nil}
	var price float64
	var capacity vec
	if merged == nil && len(pins) == 0 && ports == nil {
		i := fitNewType(c.types, c.cur, c.used, p.requests)
		if i < 0 {
			return claimChoice{}, false
		}
		choice.typeIdx, price, capacity = i, c.types[i].price, c.types[i].capacity
	} else {
		found := false
		for i := c.cur; i < len(c.types); i++ {
			t := c.types[i]
			if !c.used.fitsWith(p.requests, t.alloc) || !typeAllowsPins(t.it.Requirements, pins) {
				continue
			}
			if merged != nil && t.it.Requirements.Intersects(merged) != nil {
				continue
			}
			if _, conflict := portsConflict(t.daemonPorts, ports); conflict {
				continue
			}
			if pr := cheapestPriceWithPins(t.it.Offerings, reqs, pins); pr >= 0 {
				price, capacity, found = pr, t.capacity, true
				break
			}
		}
		if !found {
			return claimChoice{}, false
		}
	}
	if c.pool.limited {
		if grow := subVec(capacity, c.capacity()); c.pool.limitExceededIn(r.inUse[c.pool], grow) >= 0 {
			return claimChoice{}, false
		}
	}
	if c.hasMinValues && !r.minValuesHold(c, reqs, pins, p.requests, ports) {
		if r.prep.opts.MinValuesPolicy != scheduling.MinValuesBestEffort {
			return claimChoice{}, false
		}
		choice.relaxMinValues = true
	}
	choice.cost = price - c.price()
	return choice, true
}

// minValuesHold reports whether the claim's types that would still hold its pods plus extra, under reqs
// narrowed by pins and without DaemonSets holding one of ports, meet every minValues requirement.
func (r *run) minValuesHold(c *target, reqs scheduling.Requirements, pins []pin, extra vec, ports []hostPort) bool {
	var fitting []scheduling.Requirements
	for _, t := range c.types[c.cur:] {
		if _, conflict := portsConflict(t.daemonPorts, ports); conflict {
			continue
		}
		if c.used.fitsWith(extra, t.alloc) && typeAllowsPins(t.it.Requirements, pins) && r.withinLimits(c, t.typeOption) && t.it.Requirements.Intersects(reqs) == nil {
			fitting = append(fitting, t.it.Requirements)
		}
	}
	return minValuesMet(reqs, fitting, r.prep.opts.MaxInstanceTypes) == nil
}

// minValuesMet checks minValues on the types a claim would list: at most limit of them, chosen cheapest
// first while keeping minValues where possible.
func minValuesMet(reqs scheduling.Requirements, types []scheduling.Requirements, limit int) error {
	selected := scheduling.SelectWithMinValues(reqs, types, limit, func(r scheduling.Requirements) scheduling.Requirements { return r })
	return reqs.CheckMinValues(selected)
}

func typeAllowsPins(reqs scheduling.Requirements, pins []pin) bool {
	for _, pn := range pins {
		if r, ok := reqs[pn.key]; ok && !r.Has(pn.value) {
			return false
		}
	}
	return true
}

// cheapestPriceWithPins is cheapestPrice under reqs narrowed by the pins, without building the narrowed
// requirements.
func cheapestPriceWithPins(offerings cloudprovider.Offerings, reqs scheduling.Requirements, pins []pin) float64 {
	best := -1.0
	for _, o := range offerings {
		if !o.Available || !o.IsCompatible(reqs) || (best >= 0 && o.Price >= best) {
			continue
		}
		allowed := true
		for _, pn := range pins {
			switch pn.key {
			case v1.LabelTopologyZone:
				allowed = allowed && o.Zone == pn.value
			case v1.CapacityTypeLabelKey:
				allowed = allowed && o.CapacityType == pn.value
			}
		}
		if allowed {
			best = o.Price
		}
	}
	return best
}

// mergeTerm intersects the claim's requirements with one of the pod's node affinity terms, or reports that
// no node could satisfy both. It returns nil (and true) when the term adds nothing, so the caller can keep
// the claim's requirements.
func mergeTerm(reqs, term scheduling.Requirements, opts scheduling.CompatibilityOptions) (scheduling.Requirements, bool) {
	if len(term) == 0 || impliedBy(reqs, term) {
		return nil, true
	}
	if reqs.Compatible(term, opts) != nil {
		return nil, false
	}
	return reqs.Intersection(term), true
}

// impliedBy reports whether the claim's requirements already guarantee the term (every key of the term is
// constrained by the claim to a subset of what the term allows).
func impliedBy(reqs, term scheduling.Requirements) bool {
	for k, want := range term {
		have, ok := reqs[k]
		if !ok || !have.IsSubsetOf(want) {
			return false
		}
	}
	return true
}

// apply puts the pod on an open claim as priced by evaluate.
func (r *run) apply(p *podInfo, att *attempt, choice claimChoice) {
	c := choice.claim
	r.openRemove(c)
	before := c.capacity()
	c.minValuesRelaxed = c.minValuesRelaxed || choice.relaxMinValues
	if choice.merged == nil && len(choice.pins) == 0 && !choice.filterPorts {
		c.cur = choice.typeIdx
		c.used.addInPlace(p.requests)
	} else {
		reqs := choice.merged
		if reqs == nil {
			reqs = c.reqs.Clone()
		}
		for _, pn := range choice.pins {
			reqs.Add(scheduling.MustRequirement(pn.key, corev1.NodeSelectorOpIn, pn.value))
		}
		c.reqs = reqs
		c.used.addInPlace(p.requests)
		c.setTypes(r.claimTypes(c.pool, c.reqs, append(slices.Clone(c.ports), p.ports...)))
	}
	r.inUse[c.pool].addInPlace(subVec(c.capacity(), before))
	c.used = subVec(c.used, p.requests)
	r.commit(p, att, c)
	r.openInsert(c)
}

func subVec(a, b vec) vec {
	out := a.clone()
	for i := range out {
		out[i] -= b[i]
	}
	return out
}

func (p *poolInfo) limitExceededIn(inUse, add vec) int {
	for i, limited := range p.hasLimit {
		if limited && add[i] > 0 && inUse[i]+add[i] > p.limits[i] {
			return i
		}
	}
	return -1
}

// withinLimits reports whether launching t for the claim (instead of its current type) keeps the pool
// within its limits.
func (r *run) withinLimits(c *target, t *typeOption) bool {
	if !c.pool.limited {
		return true
	}
	current := c.capacity()
	inUse := r.inUse[c.pool]
	for i, limited := range c.pool.hasLimit {
		if limited && inUse[i]-current[i]+t.capacity[i] > c.pool.limits[i] {
			return false
		}
	}
	return true
}
