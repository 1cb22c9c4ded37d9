package solver

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// plan turns the run's state into the Plan.
func (r *run) plan(order Order) *Plan {
	plan := &Plan{Order: order, Placements: r.nodePlacements(), NodeClaims: []NodeClaimPlan{}, Unschedulable: []UnschedulablePod{}}
	onClaims := make(vec, len(r.prep.dims.names))
	slots := newReservationSlots(r.prep.pools)
	var unreserved []*podInfo
	for _, c := range r.claims {
		nc := r.claimPlan(c)
		if slots != nil && !slots.assign(&nc, c.reqs, r.instanceTypeRequirement) {
			unreserved = append(unreserved, c.pods...)
			continue
		}
		plan.NodeClaims = append(plan.NodeClaims, nc)
		plan.PricePerHour += nc.PricePerHour
		for _, p := range c.pods {
			onClaims.addInPlace(p.requests)
		}
	}
	plan.LowerBoundPerHour = r.lowerBound(onClaims)
	plan.MixLowerBoundPerHour = max(plan.LowerBoundPerHour, r.mixLowerBound(onClaims), r.resourceMixBound(onClaims))
	unplaced := slices.Clone(r.unplaced)
	slices.SortFunc(unplaced, func(a, b *podInfo) int { return cmp.Compare(a.index, b.index) })
	for _, p := range unplaced {
		plan.Unschedulable = append(plan.Unschedulable, UnschedulablePod{Pod: p.ref, Reasons: r.explain(p)})
	}
	for _, p := range unreserved {
		plan.Unschedulable = append(plan.Unschedulable, UnschedulablePod{Pod: p.ref, Reasons: []Reason{{Message: reservationReason}}})
	}
	return plan
}

// nodePlacements lists the pods placed on existing nodes and in-flight claims in sequence order.
// Sequences are distinct and below r.seq: when the nodes hold most of the pods, each placement is put at
// its sequence and the gaps (pods on new claims) squeezed out, which costs less than sorting them.
func (r *run) nodePlacements() []Placement {
	placed := 0
	for _, n := range r.nodes {
		placed += len(n.pods)
	}
	each := func(f func(Placement) bool) {
		for _, n := range r.nodes {
			for i, p := range n.pods {
				if !f(Placement{Pod: p.ref, Target: n.name, InFlight: n.kind == kindInFlight, Sequence: n.seqs[i]}) {
					return
				}
			}
		}
	}
	if 2*placed >= r.seq {
		bySeq, filled := make([]Placement, r.seq), make([]bool, r.seq)
		distinct := true
		each(func(pl Placement) bool {
			if s := pl.Sequence; s >= 0 && s < r.seq && !filled[s] {
				bySeq[s], filled[s] = pl, true
				return true
			}
			distinct = false
			return false
		})
		if distinct {
			out := bySeq[:0]
			for s := range bySeq {
				if filled[s] {
					out = append(out, bySeq[s])
				}
			}
			return out
		}
	}
	out := make([]Placement, 0, placed)
	each(func(pl Placement) bool {
		out = append(out, pl)
		return true
	})
	slices.SortFunc(out, func(a, b Placement) int { return cmp.Compare(a.Sequence, b.Sequence) })
	return out
}

// outcome is the plan's unplaced pods and price, as plan would report them, without spelling out the
// NodeClaims: the price of a claim without minValues from a pool without limits is its first fitting
// type's cheapest offering, as in claimPlan.
func (r *run) outcome() outcome {
	o := outcome{unplaced: len(r.unplaced)}
	zero := make(vec, len(r.prep.dims.names))
	for _, c := range r.claims {
		if c.hasMinValues || c.pool.limited {
			o.price += r.claimPlan(c).PricePerHour
			continue
		}
		price := c.price()
		if i := fitNewType(c.types, c.cur, c.used, zero); i >= 0 {
			if cheapest, ok := c.types[i].it.Offerings.CheapestCompatible(c.reqs); ok {
				price = cheapest.Price
			}
		}
		o.price += price
	}
	return o
}

func (r *run) claimPlan(c *target) NodeClaimPlan {
	dims := r.prep.dims
	// Types that hold every pod without breaking the pool's limits; the current type is first. Limits are
	// shared by claims planned later, so when dropping the types that no longer fit the headroom would
	// break minValues, those types are kept (the cheapest type, which is what limits count, always fits).
	zero := make(vec, len(dims.names))
	var fitting []pricedType
	withinLimits := r.planTypes[:0] // read only here (a run plans one claim at a time)
	defer func() { r.planTypes = withinLimits[:0] }()
	for i := fitNewType(c.types, c.cur, c.used, zero); i >= 0; i = fitNewType(c.types, i+1, c.used, zero) {
		t := c.types[i]
		if c.hasMinValues {
			fitting = append(fitting, t)
		}
		if r.withinLimits(c, t.typeOption) {
			withinLimits = append(withinLimits, t)
			if !c.hasMinValues && len(withinLimits) >= r.prep.opts.MaxInstanceTypes {
				break
			}
		}
	}
	if c.hasMinValues && len(withinLimits) < len(fitting) {
		var fittingReqs, withinReqs []scheduling.Requirements
		for _, t := range fitting {
			fittingReqs = append(fittingReqs, t.it.Requirements)
		}
		for _, t := range withinLimits {
			withinReqs = append(withinReqs, t.it.Requirements)
		}
		if c.reqs.CheckMinValues(withinReqs) != nil && c.reqs.CheckMinValues(fittingReqs) == nil {
			withinLimits = fitting
		}
	}
	fitting = withinLimits
	fitting = scheduling.SelectWithMinValues(c.reqs, fitting, r.prep.opts.MaxInstanceTypes, func(t pricedType) scheduling.Requirements { return t.it.Requirements })
	// The claim requests its pods and the DaemonSets of whichever listed type is launched: the least any
	// of them runs, per resource.
	daemons := minDaemons(fitting, len(dims.names))
	requests := c.used.clone()
	requests.addInPlace(daemons)
	nc := NodeClaimPlan{Name: c.name, NodePool: c.pool.name, PricePerHour: c.price(), Sequences: slices.Clone(c.seqs),
		Requests: dims.list(requests), DaemonSetOverhead: dims.list(daemons), Taints: c.taints, MinValuesRelaxed: c.minValuesRelaxed}
	var names []string
	if len(fitting) > 0 { // sized once; nil when no type fits, as before
		names, nc.InstanceTypes = make([]string, 0, len(fitting)), make([]*cloudprovider.InstanceType, 0, len(fitting))
	}
	for _, t := range fitting {
		nc.InstanceTypes = append(nc.InstanceTypes, t.it)
		names = append(names, t.it.Name)
	}
	nc.InstanceTypeNames = names
	reqs := c.reqs.Clone()
	reqs.Add(r.instanceTypeRequirement(names))
	nc.Requirements = reqs.NodeSelectorRequirements()
	if len(fitting) > 0 {
		if o, ok := fitting[0].it.Offerings.CheapestCompatible(c.reqs); ok {
			nc.Zone, nc.CapacityType, nc.PricePerHour = o.Zone, o.CapacityType, o.Price
		}
	}
	for _, p := range c.pods {
		nc.Pods = append(nc.Pods, p.ref)
	}
	return nc
}

// instanceTypeRequirement is "instance type In names", built once per list of names: claims of one shape
// list the same types.
func (r *run) instanceTypeRequirement(names []string) scheduling.Requirement {
	key := strings.Join(names, "\x00")
	if req, ok := r.instanceTypeReqs[key]; ok {
		return req
	}
	req := scheduling.MustRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, names...)
	if r.instanceTypeReqs == nil {
		r.instanceTypeReqs = map[string]scheduling.Requirement{}
	}
	r.instanceTypeReqs[key] = req
	return req
}

// lowerBound prices the requests of each resource at the cheapest price per allocatable unit of it among
// every pool's types that offer it (cpu, memory, GPUs, Neuron devices, …), and takes the largest: no
// packing onto these types can cost less, since whatever holds R units of a resource costs at least R
// times its cheapest price per unit.
func (r *run) lowerBound(requests vec) float64 {
	bound := 0.0
	for d, amount := range requests {
		if amount <= 0 {
			continue
		}
		best := math.Inf(1)
		for _, pool := range r.prep.pools {
			for _, t := range pool.types {
				if t.alloc[d] > 0 {
					best = min(best, t.price/float64(t.alloc[d]))
				}
			}
		}
		if !math.IsInf(best, 1) {
			bound = max(bound, best*float64(amount))
		}
	}
	return bound
}

// weightedBound is the lower bound a weighting of the resources proves: with a weight w[d] ≥ 0 per unit
// of each resource, a type t is worth v(t) = Σ w[d]·alloc[t][d], and no type is worth more than s times
// its price, where s = max over t of v(t)/price(t). Any packing holds the requests R, so the types it
// launches are worth at least Σ w[d]·R[d] and cost at least that over s. This is weak duality for the
// linear program "cheapest fractional mix of types covering every requested resource": every weighting
// gives a sound bound, and the best one equals the program's optimum. perDollar holds each type's
// allocatable of the weighted resources divided by its price; requests the pods' total of each.
func weightedBound(perDollar [][]float64, requests, w []float64) float64 {
	worth := 0.0
	for d, x := range w {
		worth += x * requests[d]
	}
	scale := 0.0
	for _, a := range perDollar {
		v := 0.0
		for d, x := range w {
			v += x * a[d]
		}
		scale = max(scale, v)
	}
	if scale <= 0 || worth <= 0 {
		return 0
	}
	return worth / scale
}

// undominated drops the points that another point equals or exceeds in every coordinate. Rounded
// arithmetic is monotone, so for positive weights the largest weighted sum over what it keeps is exactly
// the largest over all the points.
func undominated(points [][]float64) [][]float64 {
	sorted := slices.Clone(points)
	// By first coordinate, largest first: a point's dominators then come before it, ties aside (a tie
	// may keep a dominated point, which changes nothing).
	slices.SortStableFunc(sorted, func(a, b []float64) int { return cmp.Compare(b[0], a[0]) })
	var kept [][]float64
	for _, p := range sorted {
		dominated := slices.ContainsFunc(kept, func(q []float64) bool {
			for i := range p {
				if q[i] < p[i] {
					return false
				}
			}
			return true
		})
		if !dominated {
			kept = append(kept, p)
		}
	}
	return kept
}

// resourceMixBound searches for a good weighting of every requested resource the types offer (see
// weightedBound), starting from each resource's cheapest price per unit and improving one weight at a
// time with shrinking steps. It is sound whatever the search finds; it is the tighter mix bound when the
// pods request extended resources (GPUs): GPU types then have to be paid for their cpu and memory too.
func (r *run) resourceMixBound(requests vec) float64 {
	var dims []int
	for d, amount := range requests {
		if amount <= 0 {
			continue
		}
		for _, pool := range r.prep.pools {
			if slices.ContainsFunc(pool.types, func(t pricedType) bool { return t.alloc[d] > 0 }) {
				dims = append(dims, d)
				break
			}
		}
	}
	if len(dims) == 0 {
		return 0
	}
	var perDollar [][]float64
	for _, pool := range r.prep.pools {
		for _, t := range pool.types {
			if t.price <= 0 {
				return 0 // a free type makes any amount free
			}
			a := make([]float64, len(dims))
			for i, d := range dims {
				a[i] = float64(t.alloc[d]) / t.price
			}
			perDollar = append(perDollar, a)
		}
	}
	// Weights stay positive, so a type with no more of every resource per dollar than another never sets
	// the maximum: the search only needs the others (a few dozen of the EC2 catalog's 1,363 types).
	perDollar = undominated(perDollar)
	total := make([]float64, len(dims))
	// Weights start as the cheapest price per unit of each resource, so that each counts comparably.
	w := make([]float64, len(dims))
	for i, d := range dims {
		total[i] = float64(requests[d])
		most := 0.0
		for _, a := range perDollar {
			most = max(most, a[i])
		}
		w[i] = 1 / most
	}
	best := weightedBound(perDollar, total, w)
	for step := 1.0; step > 1.0/64; step /= 2 {
		for improved := true; improved; {
			improved = false
			for i := range w {
				for _, f := range []float64{1 + step, 1 / (1 + step)} {
					old := w[i]
					w[i] = old * f
					if b := weightedBound(perDollar, total, w); b > best*(1+1e-12) {
						best, improved = b, true
						continue
					}
					w[i] = old
				}
			}
		}
	}
	return best
}

// mixLowerBound is the cheapest fractional mix of instance types whose allocatable cpu and memory together
// cover the requests: a linear program with two constraints, whose optimum uses one type or two. It is
// tighter than lowerBound when no single type is cheapest for both resources (for example compute- and
// memory-optimised EC2 families), and still no packing can cost less.
func (r *run) mixLowerBound(requests vec) float64 {
	type shape struct{ cpu, mem, price float64 }
	var shapes []shape
	for _, pool := range r.prep.pools {
		for _, t := range pool.types {
			if t.alloc[dimCPU] > 0 && t.alloc[dimMemory] > 0 {
				if t.price <= 0 {
					return 0 // a free type makes any amount free
				}
				shapes = append(shapes, shape{float64(t.alloc[dimCPU]), float64(t.alloc[dimMemory]), t.price})
			}
		}
	}
	cpu, mem := float64(requests[dimCPU]), float64(requests[dimMemory])
	if len(shapes) == 0 || (cpu == 0 && mem == 0) {
		return 0
	}
	// Only types that no other type beats on both cpu and memory per dollar can be in the optimum: keep
	// that Pareto frontier (usually a few dozen types) before trying pairs.
	slices.SortFunc(shapes, func(a, b shape) int {
		return cmp.Or(cmp.Compare(b.cpu/b.price, a.cpu/a.price), cmp.Compare(b.mem/b.price, a.mem/a.price))
	})
	frontier := shapes[:0]
	bestMem := -1.0
	for _, sh := range shapes {
		if perDollar := sh.mem / sh.price; perDollar > bestMem {
			frontier = append(frontier, sh)
			bestMem = perDollar
		}
	}
	shapes = frontier
	best := math.Inf(1)
	for i, a := range shapes {
		best = min(best, a.price*max(cpu/a.cpu, mem/a.mem))
		for _, b := range shapes[i+1:] {
			// Both constraints tight: xa*a + xb*b = (cpu, mem).
			det := a.cpu*b.mem - a.mem*b.cpu
			if det == 0 {
				continue
			}
			xa := (cpu*b.mem - mem*b.cpu) / det
			xb := (a.cpu*mem - a.mem*cpu) / det
			if xa >= 0 && xb >= 0 {
				best = min(best, xa*a.price+xb*b.price)
			}
		}
	}
	return best
}

// explain gives one reason per NodePool why the pod (under its most relaxed attempt) can't be placed.
func (r *run) explain(p *podInfo) []Reason {
	if p.invalid != nil {
		return []Reason{{Message: "invalid pod spec: " + p.invalid.Error()}}
	}
	att, ok := r.lastAtt[p]
	if !ok {
		atts := p.attempts(r.prep.opts.PreferencePolicy)
		att = atts[len(atts)-1]
	}
	if len(r.prep.pools) == 0 {
		msg := "no NodePool can launch nodes"
		if summary := r.explainNodes(p, &att); summary != "" {
			msg += "; " + summary
		}
		return []Reason{{Message: msg}}
	}
	var out []Reason
	if summary := r.explainNodes(p, &att); summary != "" {
		out = append(out, Reason{Message: summary})
	}
	for _, pool := range r.prep.pools {
		why := r.explainPool(p, &att, pool)
		if why == "" {
			why = "a new node would fit the pod alone, but not alongside the pods placed before it"
		}
		out = append(out, Reason{NodePool: pool.name, Message: why})
	}
	return out
}

// explainNodes summarises why no existing node or in-flight claim took the pod, e.g.
// "existing nodes: 2 insufficient cpu, 1 taint dedicated=a:NoSchedule not tolerated".
func (r *run) explainNodes(p *podInfo, att *attempt) string {
	if len(r.nodes) == 0 {
		return ""
	}
	counts := map[string]int{}
	var order []string
	for _, n := range r.nodes {
		why := r.nodeRejection(p, att, n, true)
		if why == "" {
			why = "fits now, but not alongside the pods placed before it"
		}
		if counts[why] == 0 {
			order = append(order, why)
		}
		counts[why]++
	}
	parts := make([]string, 0, len(order))
	for _, why := range order {
		parts = append(parts, strconv.Itoa(counts[why])+" "+why)
	}
	return "existing nodes: " + strings.Join(parts, ", ")
}
