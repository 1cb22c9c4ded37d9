package solver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// prepared is the part of a solve that doesn't change between packing attempts.
type prepared struct {
	opts    Options
	dims    *resourceDims
	topo    *topology
	pods    []*podInfo // pending pods, input order
	bound   []*podInfo // pods on nodes and in-flight claims
	boundOn []int      // target index of each bound pod
	// waiting indexes the bound pods that await binding with hard spreads of their own (settle.go).
	waiting   []int
	pools     []*poolInfo
	nodes     []*target // existing nodes then in-flight claims, baseline state
	poolUsage map[*poolInfo]vec
	// parsed holds the pending pods by pod, when bound pods may share their parsing (prepareSharing).
	parsed map[*corev1.Pod]*podInfo
	// compat lets pods require well-known labels a NodePool leaves to its instance types.
	compat scheduling.CompatibilityOptions
	// arena holds the parsed pods.
	arena podArena
	// untracked is set when a pod requests a resource dims leave out (prepareSharing).
	untracked bool
	// hosts is, by group id, the domain where the group's hard spreads go first ("" for none; spread_hosts.go).
	hosts []string
	// keeping is set when a pending pod has an earlier place (Input.EarlierPlaces): placement runs in three
	// rounds (run.placeKeeping).
	keeping bool
}

// Solve places the pods. It returns an error only for a cancelled context; everything it can't place is
// reported in Plan.Unschedulable with reasons.
func Solve(ctx context.Context, in Input, opts Options) (*Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("solving, %w", err)
	}
	return solvePrepared(ctx, prepare(in, opts.withDefaults()))
}

// solvePrepared packs the prepared pods in every order and returns the best plan.
func solvePrepared(ctx context.Context, prep *prepared) (*Plan, error) {
	// Each order packs independently from the shared, read-only preparation, so they run in parallel; the
	// winner is picked in the order they are listed, which keeps the result deterministic.
	runs := make([]*run, len(prep.opts.Orders))
	outcomes := make([]outcome, len(prep.opts.Orders))
	errs := make([]error, len(prep.opts.Orders))
	var wg sync.WaitGroup
	for i, order := range prep.opts.Orders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := newRun(prep)
			if errs[i] = r.placeAll(ctx, prep.order(order)); errs[i] == nil {
				r.improve()
				r.repack()
				runs[i], outcomes[i] = r, r.outcome()
			}
		}()
	}
	wg.Wait()
	best := -1
	for i := range runs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if best < 0 || better(outcomes[i], outcomes[best]) {
			best = i
		}
	}
	// Only the winner's plan is spelled out (NodeClaim requirements, instance-type lists, reasons).
	return runs[best].plan(prep.opts.Orders[best]), nil
}

// outcome is what plans are compared by: the pods left unplaced and the plan's price.
type outcome struct {
	unplaced int
	price    float64
}

// better prefers fewer unplaced pods, then a lower price.
func better(a, b outcome) bool {
	if a.unplaced != b.unplaced {
		return a.unplaced < b.unplaced
	}
	return a.price < b.price-1e-9
}

func prepare(in Input, opts Options) *prepared {
	return prepareSharing(in, opts, false)
}

// prepareSharing is prepare; with share, the preparation is for a Base, which only reuses one without
// topology groups, where a bound pod is read for nothing but its requests and ports: a pod both pending
// and bound is parsed once and entered in both lists as the same podInfo, and a bound pod without
// topology terms of its own is only summed into its target (prep.bound lacks it, so that a preparation
// with groups is unfit for solving).
//
// A Base has no use for a preparation with more than the four tracked resources, and in the usual cluster no
// pod requests another: with share, the pods are read once, parsed with those four, rather than once more
// beforehand by demandedResources; should one of them (or an in-flight claim, a DaemonSet or a NodePool
// limit) name another resource after all, the preparation is made again the usual way.
func prepareSharing(in Input, opts Options, share bool) *prepared {
	if share && !untrackedOutsidePods(in) {
		if prep := prepareWith(in, opts, share, newResourceDims(nil)); !prep.untracked {
			return prep
		}
	}
	return prepareWith(in, opts, share, newResourceDims(demandedResources(in)))
}

// untrackedOutsidePods reports whether an in-flight claim's requests, a DaemonSet's pods or a NodePool's
// limits name a resource beyond the four every solve tracks that some instance type offers (what
// demandedResources would add for them).
func untrackedOutsidePods(in Input) bool {
	used := map[corev1.ResourceName]bool{}
	mark := func(name corev1.ResourceName) { used[name] = true }
	for _, f := range in.InFlight {
		forEachExtraName(f.NodeClaim.Spec.Resources.Requests, mark)
	}
	for _, ds := range in.DaemonSets {
		forEachRequestName(&ds.Spec.Template.Spec, mark)
	}
	for _, np := range in.NodePools {
		forEachExtraName(corev1.ResourceList(np.Spec.Limits), mark)
	}
	if len(used) == 0 {
		return false
	}
	for _, its := range in.InstanceTypes {
		for _, it := range its {
			for name := range it.Capacity {
				if used[name] {
					return true
				}
			}
		}
	}
	return false
}

// prepareWith is prepareSharing with the resource dimensions given; the preparation's untracked says
// whether a pod requests a resource they leave out.
func prepareWith(in Input, opts Options, share bool, dims *resourceDims) *prepared {
	prep := &prepared{opts: opts, dims: dims, topo: newTopology(), poolUsage: map[*poolInfo]vec{},
		compat: scheduling.AllowUndefinedWellKnown()}
	if share {
		prep.parsed = make(map[*corev1.Pod]*podInfo, len(in.Pods))
	}
	volumes := newVolumeIndex(in.Volumes)
	for i, pod := range in.Pods {
		prep.pods = append(prep.pods, newPodInfo(&prep.arena, pod, i, prep.dims, prep.topo, volumes))
		if share {
			prep.parsed[pod] = prep.pods[i]
		}
	}
	prep.pools = newPoolInfos(in, prep.dims, newDaemonInfos(in.DaemonSets, prep.dims), prep.compat)
	prep.addNodes(in)
	prep.markEarlierPlaces(in.EarlierPlaces)
	// Every parsed pod once: a bound pod that shares its pending twin's podInfo (share) is that pod.
	all := slices.Clone(prep.pods)
	for _, p := range prep.bound {
		if p.index < 0 {
			all = append(all, p)
		}
	}
	owners := map[*group]bool{}
	for _, p := range all {
		prep.untracked = prep.untracked || p.untracked
		for _, a := range p.affinities {
			if a.owners != nil {
				owners[a.owners] = true
			}
		}
	}
	for _, p := range all {
		p.linkGroups(prep.topo, owners)
	}
	keys := []string{v1.LabelTopologyZone, v1.CapacityTypeLabelKey}
	for _, g := range prep.topo.groups {
		keys = append(keys, g.key)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	for _, pool := range prep.pools {
		pool.precomputeDomains(keys)
	}
	prep.prepareUniverses()
	for _, p := range prep.pods {
		p.tries = p.attempts(opts.PreferencePolicy)
		p.signature = swapSignature(p)
	}
	prep.markSettling()
	return prep
}

// demandedResources lists the resources a solve has to track: every resource a pending pod requests, and
// each resource the instance types offer that bound pods, daemonsets, in-flight claims or NodePool limits
// use. Resources only offered (an EC2 type's pod ENIs or EFA devices, when nothing asks for them) can't
// change any fit, and leaving them out keeps the vectors short.
func demandedResources(in Input) []corev1.ResourceList {
	pending := corev1.ResourceList{}
	used := map[corev1.ResourceName]bool{}
	markUsed := func(name corev1.ResourceName) { used[name] = true }
	for _, pod := range in.Pods {
		forEachRequestName(&pod.Spec, func(name corev1.ResourceName) { pending[name] = resource.Quantity{} })
	}
	for _, n := range in.Nodes {
		for _, pod := range n.Pods {
			forEachRequestName(&pod.Spec, markUsed)
		}
	}
	for _, f := range in.InFlight {
		for _, pod := range f.Pods {
			forEachRequestName(&pod.Spec, markUsed)
		}
		for name := range f.NodeClaim.Spec.Resources.Requests {
			used[name] = true
		}
	}
	for _, ds := range in.DaemonSets {
		forEachRequestName(&ds.Spec.Template.Spec, markUsed)
	}
	for _, np := range in.NodePools {
		for name := range np.Spec.Limits {
			used[name] = true
		}
	}
	offered := corev1.ResourceList{}
	for _, its := range in.InstanceTypes {
		for _, it := range its {
			for name := range it.Capacity {
				if used[name] {
					offered[name] = resource.Quantity{}
				}
			}
		}
	}
	return []corev1.ResourceList{pending, offered}
}

// forEachRequestName calls f with each resource a pod's containers, init containers and overhead request
// (a name may come more than once), except the four every solve tracks (newResourceDims), which change
// nothing here. It builds no list, and a request list of only those four is not iterated but looked up:
// demandedResources reads every pod of the cluster.
func forEachRequestName(spec *corev1.PodSpec, f func(corev1.ResourceName)) {
	for _, list := range [2][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range list {
			forEachExtraName(list[i].Resources.Requests, f)
		}
	}
	forEachExtraName(spec.Overhead, f)
}

// trackedResources are the resources newResourceDims always tracks.
var trackedResources = [...]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage}

func forEachExtraName(l corev1.ResourceList, f func(corev1.ResourceName)) {
	if len(l) == 0 {
		return
	}
	if len(l) <= len(trackedResources) {
		tracked := 0
		for _, name := range trackedResources {
			if _, ok := l[name]; ok {
				tracked++
			}
		}
		if tracked == len(l) {
			return
		}
	}
	for name := range l {
		if !slices.Contains(trackedResources[:], name) {
			f(name)
		}
	}
}

func (prep *prepared) addNodes(in Input) {
	poolByName := map[string]*poolInfo{}
	for _, p := range prep.pools {
		poolByName[p.name] = p
		prep.poolUsage[p] = make(vec, len(prep.dims.names))
	}
	nodes := slices.Clone(in.Nodes)
	slices.SortStableFunc(nodes, func(a, b ExistingNode) int { return cmp.Compare(a.Node.Name, b.Node.Name) })
	for _, n := range nodes {
		t := &target{id: len(prep.nodes), name: n.Node.Name, kind: kindNode, labels: n.Node.Labels,
			reqs: scheduling.FromLabels(n.Node.Labels), taints: n.Node.Spec.Taints, alloc: prep.dims.vec(n.Node.Status.Allocatable),
			cordoned: n.Node.Spec.Unschedulable || n.Node.DeletionTimestamp != nil}
		if pool, ok := poolByName[n.Node.Labels[v1.NodePoolLabelKey]]; ok {
			prep.poolUsage[pool].addInPlace(prep.dims.vec(n.Node.Status.Capacity))
		}
		prep.addTarget(t, n.Pods)
	}
	claims := slices.Clone(in.InFlight)
	slices.SortStableFunc(claims, func(a, b InFlightNodeClaim) int { return cmp.Compare(a.NodeClaim.Name, b.NodeClaim.Name) })
	for _, c := range claims {
		nc := c.NodeClaim
		reqs, err := scheduling.FromNodePoolRequirements(nc.Spec.Requirements)
		if err != nil {
			reqs = scheduling.Requirements{}
		}
		reqs = reqs.Intersection(scheduling.FromLabels(nc.Labels))
		pool := poolByName[nc.Labels[v1.NodePoolLabelKey]]
		t := &target{id: len(prep.nodes), name: nc.Name, kind: kindInFlight, pool: pool, reqs: reqs, taints: nc.Spec.Taints}
		t.alloc, t.labels = prep.inFlightAllocatable(nc, pool, reqs), reqs.Labels()
		t.labels[v1.LabelHostname] = nc.Name
		if pool != nil {
			capacity := prep.dims.vec(nc.Status.Capacity)
			if len(nc.Status.Capacity) == 0 {
				capacity = t.alloc
			}
			prep.poolUsage[pool].addInPlace(capacity)
		}
		// In-flight claims are matched like nodes, by the labels their requirements fix.
		t.reqs = scheduling.FromLabels(t.labels)
		prep.addTarget(t, c.Pods)
	}
}

// inFlightAllocatable is status.allocatable once known, else that of the cheapest type the claim allows
// that fits its requested resources.
func (prep *prepared) inFlightAllocatable(nc *v1.NodeClaim, pool *poolInfo, reqs scheduling.Requirements) vec {
	if len(nc.Status.Allocatable) > 0 {
		return prep.dims.vec(nc.Status.Allocatable)
	}
	requests := prep.dims.vec(nc.Spec.Resources.Requests)
	if pool != nil {
		zero := make(vec, len(requests))
		for _, t := range pool.types {
			if allocatable := t.allocatable(); t.it.Requirements.Intersects(reqs) == nil && zero.fitsWith(requests, allocatable) {
				return allocatable
			}
		}
	}
	return requests
}

func (prep *prepared) addTarget(t *target, pods []*corev1.Pod) {
	t.used = make(vec, len(prep.dims.names))
	sorted := slices.Clone(pods)
	slices.SortStableFunc(sorted, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var scratch vec
	for _, pod := range sorted {
		// A bound pod's index (negative) is never read; one that is also pending (prepareSharing) is
		// entered as its pending podInfo, which placement reads the same way.
		p, ok := prep.parsed[pod]
		if !ok && prep.parsed != nil && !hasTopologyTerms(pod) {
			// Preparing for a Base, a pod neither pending nor constraining topology matters only to
			// topology groups that select it, and a Base reuses no preparation that has groups: it is
			// summed into its target without a podInfo.
			if scratch == nil {
				scratch = make(vec, len(prep.dims.names))
			}
			clear(scratch)
			requests, untracked := podRequestsInto(scratch, pod, prep.dims)
			t.used.addInPlace(requests)
			prep.untracked = prep.untracked || untracked
			t.ports = append(t.ports, podHostPorts(pod)...)
			continue
		}
		if !ok {
			p = newBoundPodInfo(&prep.arena, pod, -1-len(prep.bound), prep.dims, prep.topo)
			if awaitsBinding(p) && len(p.spreads) > 0 {
				p.readSpreadScope()
				prep.waiting = append(prep.waiting, len(prep.bound))
			}
		}
		t.used.addInPlace(p.requests)
		t.ports = append(t.ports, p.ports...)
		prep.bound = append(prep.bound, p)
		prep.boundOn = append(prep.boundOn, len(prep.nodes))
	}
	prep.nodes = append(prep.nodes, t)
}

// hasTopologyTerms reports whether the pod has a topology spread or a pod (anti-)affinity term: whether it
// brings topology groups of its own.
func hasTopologyTerms(pod *corev1.Pod) bool {
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		return true
	}
	a := pod.Spec.Affinity
	return a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil)
}

// prepareUniverses sets, for every spread of every pod, its node filter and the domains it counts: the
// values of its key that the NodePools (those whose taints the pod tolerates, when nodeTaintsPolicy is
// Honor) can launch and the existing nodes and in-flight claims the filter includes have, narrowed by the
// pod's node selector and required node affinity when nodeAffinityPolicy is Honor.
func (prep *prepared) prepareUniverses() {
	for _, p := range prep.pods {
		for _, s := range append(slices.Clone(p.spreads), p.softSpreads...) {
			prep.prepareUniverse(p, s)
		}
	}
	// The hard spreads of the pods waiting for the kube-scheduler are kept settled (settle.go), which
	// compares counts over their universe.
	for _, i := range prep.waiting {
		for _, s := range prep.bound[i].spreads {
			prep.prepareUniverse(prep.bound[i], s)
		}
	}
}

// prepareUniverse sets the node filter and universe of one of the pod's spreads.
func (prep *prepared) prepareUniverse(p *podInfo, s *spreadConstraint) {
	prep.prepareFilter(p, s)
	if s.group.key == v1.LabelHostname {
		return
	}
	var values []string
	for _, pool := range prep.pools {
		if s.honorTaints && scheduling.Tolerates(p.tolerations, pool.taints, false) != nil {
			continue
		}
		values = append(values, pool.domainValues(s.group.key, nil)...)
	}
	for _, n := range prep.nodes {
		if s.filter != nil {
			if included, _ := s.filter.includes(n); !included {
				continue
			}
		}
		if v, ok := n.labels[s.group.key]; ok {
			values = append(values, v)
		}
	}
	slices.Sort(values)
	values = slices.Compact(values)
	if s.honorAffinity {
		values = slices.DeleteFunc(values, func(v string) bool { return !anyTermAllows(p.selectorTerms, s.group.key, v) })
	}
	s.universe = values
}

func anyTermAllows(terms []scheduling.Requirements, key, value string) bool {
	for _, t := range terms {
		if t.Get(key).Has(value) {
			return true
		}
	}
	return false
}

// order returns the pending pods in the given packing order. Ties keep input order.
func (prep *prepared) order(o Order) []*podInfo {
	out := slices.Clone(prep.pods)
	byCPU := func(a, b *podInfo) int {
		return cmp.Or(cmp.Compare(b.requests[dimCPU], a.requests[dimCPU]), cmp.Compare(b.requests[dimMemory], a.requests[dimMemory]))
	}
	byMemory := func(a, b *podInfo) int {
		return cmp.Or(cmp.Compare(b.requests[dimMemory], a.requests[dimMemory]), cmp.Compare(b.requests[dimCPU], a.requests[dimCPU]))
	}
	constrained := func(a, b *podInfo) int {
		rank := func(p *podInfo) int {
			if p.constrained {
				return 0
			}
			return 1
		}
		return cmp.Or(cmp.Compare(rank(a), rank(b)), byCPU(a, b))
	}
	seeds := func(a, b *podInfo) int {
		rank := func(p *podInfo) int {
			if p.seed {
				return 0
			}
			return 1
		}
		return cmp.Or(cmp.Compare(rank(a), rank(b)), byMemory(a, b))
	}
	compare := byCPU
	switch o {
	case OrderSeedsFirst:
		compare = seeds
	case OrderMemory:
		compare = byMemory
	case OrderConstrainedFirst:
		compare = constrained
	}
	last := func(p *podInfo) int {
		if p.countedByHost {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(out, func(a, b *podInfo) int {
		return cmp.Or(cmp.Compare(last(a), last(b)), compare(a, b), cmp.Compare(a.index, b.index))
	})
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
