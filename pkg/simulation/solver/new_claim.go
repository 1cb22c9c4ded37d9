package solver

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// newClaim opens a claim for the pod from the highest-weight NodePool that can hold it. The pod's required
// node affinity terms are alternatives, tried in the pod's order as Karpenter does: every pool under the
// first term, then every pool under the next.
func (r *run) newClaim(p *podInfo, att *attempt) (claimChoice, bool) {
	for _, term := range att.terms {
		for _, pool := range r.prep.pools {
			if c, why := r.tryPool(p, att, term, pool, false); why == "" {
				return claimChoice{claim: c, cost: c.price()}, true
			}
		}
	}
	return claimChoice{}, false
}

// explainPool says why no node affinity term of the pod lets the pool hold it ("" when one does).
func (r *run) explainPool(p *podInfo, att *attempt, pool *poolInfo) string {
	if len(att.terms) == 1 {
		_, why := r.tryPool(p, att, att.terms[0], pool, true)
		return why
	}
	parts := make([]string, 0, len(att.terms))
	for i, term := range att.terms {
		_, why := r.tryPool(p, att, term, pool, true)
		if why == "" {
			return ""
		}
		parts = append(parts, fmt.Sprintf("node affinity term %d: %s", i+1, why))
	}
	return strings.Join(parts, "; ")
}

// tryPool builds a new claim from the pool holding just the pod (and the pool's daemonsets) under one of the
// pod's node affinity terms, or returns why it can't. Reasons are only spelled out when explain is set;
// otherwise a short marker is returned.
func (r *run) tryPool(p *podInfo, att *attempt, term scheduling.Requirements, pool *poolInfo, explain bool) (*target, string) {
	fail := func(format string, args ...any) (*target, string) {
		if !explain {
			return nil, "x"
		}
		return nil, fmt.Sprintf(format, args...)
	}
	if pool.invalid != "" {
		return fail("%s", pool.invalid)
	}
	if err := scheduling.Tolerates(p.tolerations, pool.taints, att.preferNoSchedule); err != nil {
		return fail("%s", err.Error())
	}
	merged, ok := mergeTerm(pool.reqs, term, r.prep.compat)
	if !ok {
		if !explain {
			return nil, "x"
		}
		return fail("incompatible requirements, %s", pool.reqs.Compatible(term, r.prep.compat).Error())
	}
	if merged == nil {
		merged = pool.reqs
	}
	t := &target{id: len(r.nodes) + len(r.claims), name: newClaimName(pool.name, r.perPool[pool]), kind: kindNewClaim,
		pool: pool, reqs: merged, taints: pool.taints, used: make(vec, len(r.prep.dims.names))}
	pins, ok, why := r.topologyFit(p, att, t, merged, explain)
	if !ok {
		return fail("%s", why)
	}
	if len(pins) > 0 {
		merged = merged.Clone()
		for _, pn := range pins {
			merged.Add(scheduling.MustRequirement(pn.key, corev1.NodeSelectorOpIn, pn.value))
		}
		t.reqs = merged
	}
	types := r.typesFor(pool, merged)
	if len(types) == 0 {
		return fail("no instance type satisfies %s", describeNarrowing(pool.reqs, merged))
	}
	if len(p.ports) > 0 && pool.daemonPorts {
		if types = withoutPortConflicts(types, p.ports); len(types) == 0 {
			return fail("host ports %s are held by daemonset pods on every allowed instance type", portList(p.ports))
		}
	}
	idx := fitNewType(types, 0, t.used, p.requests)
	if idx < 0 {
		if !explain {
			return nil, "x"
		}
		return fail("%s", r.resourceShortfall(p, types))
	}
	for ; idx < len(types); idx++ {
		if !t.used.fitsWith(p.requests, types[idx].alloc) {
			continue
		}
		if pool.limitExceededIn(r.inUse[pool], types[idx].capacity) < 0 {
			break
		}
	}
	if idx >= len(types) {
		i := pool.limitExceededIn(r.inUse[pool], types[fitNewType(types, 0, t.used, p.requests)].capacity)
		dims := r.prep.dims
		return fail("limit %s %s reached (%s in use)", dims.names[i], dims.amount(i, pool.limits[i]), dims.amount(i, r.inUse[pool][i]))
	}
	if relaxed, why := r.checkMinValues(t, types[idx:], p); why != "" {
		return fail("%s", why)
	} else {
		t.minValuesRelaxed = relaxed
	}
	t.setTypes(types)
	t.cur = idx
	for _, rq := range t.reqs {
		t.hasMinValues = t.hasMinValues || rq.MinValues != nil
	}
	return t, ""
}

// claimTypes is typesFor without the types on which DaemonSets hold one of the claim's host ports.
func (r *run) claimTypes(pool *poolInfo, reqs scheduling.Requirements, ports []hostPort) []pricedType {
	types := r.typesFor(pool, reqs)
	if len(ports) > 0 && pool.daemonPorts {
		return withoutPortConflicts(types, ports)
	}
	return types
}

// typesFor returns the pool's types compatible with reqs, priced under them, cached by requirements.
func (r *run) typesFor(pool *poolInfo, reqs scheduling.Requirements) []pricedType {
	if len(reqs) == len(pool.reqs) && reqs.String() == pool.reqs.String() {
		return pool.types
	}
	if r.typeCache == nil {
		r.typeCache = map[string][]pricedType{}
	}
	key := pool.name + "\x00" + reqs.String()
	if cached, ok := r.typeCache[key]; ok {
		return cached
	}
	types := priceTypes(pool.types, reqs)
	r.typeCache[key] = types
	return types
}

// checkMinValues applies the minValues policy to the types that can hold the pod. It returns whether the
// requirement was relaxed (BestEffort), or why the claim fails (Strict).
func (r *run) checkMinValues(t *target, types []pricedType, p *podInfo) (bool, string) {
	hasMin := false
	for _, rq := range t.reqs {
		hasMin = hasMin || rq.MinValues != nil
	}
	if !hasMin {
		return false, ""
	}
	var fitting []scheduling.Requirements
	for _, ty := range types {
		if t.used.fitsWith(p.requests, ty.alloc) {
			fitting = append(fitting, ty.it.Requirements)
		}
	}
	if err := minValuesMet(t.reqs, fitting, r.prep.opts.MaxInstanceTypes); err != nil {
		if r.prep.opts.MinValuesPolicy == scheduling.MinValuesBestEffort {
			return true, ""
		}
		return false, err.Error()
	}
	return false, ""
}

// resourceShortfall explains why no type can hold the pod: the first resource it needs more of than the
// type with the most room for it has, after that type's DaemonSets.
func (r *run) resourceShortfall(p *podInfo, types []pricedType) string {
	dims := r.prep.dims
	for i := range dims.names {
		roomiest := 0
		for j, t := range types {
			if t.alloc[i] > types[roomiest].alloc[i] {
				roomiest = j
			}
		}
		t := types[roomiest]
		if p.requests[i] <= t.alloc[i] {
			continue
		}
		if t.daemons[i] > 0 {
			return fmt.Sprintf("needs %s after %s daemonset overhead, largest allowed type has %s",
				dims.format(i, p.requests[i]+t.daemons[i]), dims.format(i, t.daemons[i]), dims.format(i, t.alloc[i]+t.daemons[i]))
		}
		return fmt.Sprintf("needs %s, largest allowed type has %s", dims.format(i, p.requests[i]), dims.format(i, t.alloc[i]))
	}
	var parts []string
	for i := range p.requests {
		if p.requests[i] > 0 {
			parts = append(parts, dims.format(i, p.requests[i]))
		}
	}
	msg := "no single allowed type has all of " + strings.Join(parts, ", ")
	if slices.ContainsFunc(types, func(t pricedType) bool { return slices.ContainsFunc(t.daemons, func(q int64) bool { return q > 0 }) }) {
		msg += " after daemonset overhead"
	}
	return msg
}

// portList renders host ports for people, e.g. "TCP/8080, UDP/53".
func portList(ports []hostPort) string {
	parts := make([]string, 0, len(ports))
	for _, pt := range ports {
		parts = append(parts, pt.String())
	}
	return strings.Join(parts, ", ")
}

// describeNarrowing shows the requirements the pod added to the pool's.
func describeNarrowing(pool, merged scheduling.Requirements) string {
	var parts []string
	for _, k := range merged.Keys() {
		if p, ok := pool[k]; !ok || p.String() != merged[k].String() {
			parts = append(parts, k+" "+merged[k].String())
		}
	}
	if len(parts) == 0 {
		return "the nodepool's requirements"
	}
	return strings.Join(parts, "; ")
}
