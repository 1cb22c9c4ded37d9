package solver

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// typeOption is an instance type of a pool with its resources as vectors.
type typeOption struct {
	it *cloudprovider.InstanceType
	// alloc is what pods may use: the type's allocatable less the requests of the DaemonSets that would
	// run on a node of this type from the pool (daemons). A dimension is negative when the DaemonSets
	// alone don't fit.
	alloc    vec
	capacity vec
	daemons  vec
	// daemonPorts are the host ports those DaemonSets hold.
	daemonPorts []hostPort
}

// allocatable is the type's allocatable before DaemonSets.
func (t *typeOption) allocatable() vec {
	out := t.alloc.clone()
	out.addInPlace(t.daemons)
	return out
}

// pricedType is a type priced under a NodeClaim's requirements.
type pricedType struct {
	*typeOption
	price float64
	// blockMax is the largest allocatable, per resource, of the types in this type's block of its list
	// (typeBlock consecutive types), and blockRest how many of them are at or after this one: a search
	// for a type that fits skips the rest of a block whose maximum can't hold the request (fitNewType).
	// nil when the list wasn't built by priceTypes; then nothing is skipped.
	blockMax  vec
	blockRest int
	// list summarises the whole list the type was priced into (nil as blockMax is).
	list *typeList
}

// typeList is what a search of a priced list needs to know about the list as a whole.
type typeList struct {
	n        int
	maxAlloc vec
	// offering has, per resource that only some of the types offer (GPUs, Neuron devices, …), the types
	// offering it, in list order; nil for resources most types offer. A pod that requests such a resource
	// is only tried on those types.
	offering []*offeredTypes
}

// offeredTypes are the types of a list that offer one resource: their positions in the list, and their
// prices and allocatables copied side by side, so that a search reads one small contiguous block instead
// of following a pointer per type.
type offeredTypes struct {
	positions []int
	prices    []float64
	// allocs holds the allocatable of the type at positions[k] in allocs[k*dims : (k+1)*dims], and
	// prefixMax, in the same layout, the largest allocatable per resource of the types up to k: a
	// search capped by price gives up at once when even the largest of the types below the cap can't
	// hold the request. blockMax holds, per block of offeredBlock consecutive types, their largest
	// allocatable per resource, so that a search passes a block that can't hold the request at once.
	allocs, prefixMax, blockMax []int64
	dims                        int
}

// offeredBlock is the number of consecutive offering types one blockMax entry covers.
const offeredBlock = 8

// alloc is the allocatable of the k-th offering type.
func (o *offeredTypes) alloc(k int) vec { return o.allocs[k*o.dims : (k+1)*o.dims : (k+1)*o.dims] }

// maxAllocUpTo is the largest allocatable, per resource, of the offering types 0 … k.
func (o *offeredTypes) maxAllocUpTo(k int) vec {
	return o.prefixMax[k*o.dims : (k+1)*o.dims : (k+1)*o.dims]
}

// maxAllocOfBlock is the largest allocatable, per resource, of the offering types in k's block.
func (o *offeredTypes) maxAllocOfBlock(k int) vec {
	b := k / offeredBlock
	return o.blockMax[b*o.dims : (b+1)*o.dims : (b+1)*o.dims]
}

// newOfferedTypes gathers the types of list at positions.
func newOfferedTypes(types []pricedType, positions []int) *offeredTypes {
	dims := len(types[0].alloc)
	o := &offeredTypes{positions: positions, prices: make([]float64, len(positions)), allocs: make([]int64, 0, len(positions)*dims), dims: dims}
	for k, i := range positions {
		o.prices[k] = types[i].price
		o.allocs = append(o.allocs, types[i].alloc...)
	}
	o.prefixMax = slices.Clone(o.allocs)
	for k := dims; k < len(o.prefixMax); k++ {
		o.prefixMax[k] = max(o.prefixMax[k], o.prefixMax[k-dims])
	}
	o.blockMax = make([]int64, (len(positions)+offeredBlock-1)/offeredBlock*dims)
	for k := range positions {
		block := o.maxAllocOfBlock(k)
		if k%offeredBlock == 0 {
			copy(block, o.alloc(k))
			continue
		}
		for d, a := range o.alloc(k) {
			block[d] = max(block[d], a)
		}
	}
	return o
}

// typeBlock is the number of consecutive types a pricedType list summarises in one blockMax. Most of an EC2
// list's types can't hold a pod of 64 cpu; blocks let a search pass them 16 at a time.
const typeBlock = 16

// indexList sets blockMax, blockRest and list on a list sorted as it will be searched.
func indexList(types []pricedType) {
	if len(types) == 0 {
		return
	}
	l := &typeList{n: len(types), maxAlloc: make(vec, len(types[0].alloc)), offering: make([]*offeredTypes, len(types[0].alloc))}
	for start := 0; start < len(types); start += typeBlock {
		end := min(start+typeBlock, len(types))
		block := types[start].alloc.clone()
		for _, t := range types[start+1 : end] {
			for d, a := range t.alloc {
				block[d] = max(block[d], a)
			}
		}
		for i := start; i < end; i++ {
			types[i].blockMax, types[i].blockRest, types[i].list = block, end-i, l
		}
		l.maxAlloc = maxVec(l.maxAlloc, block)
	}
	for d := range l.offering {
		var positions []int
		for i, t := range types {
			if t.alloc[d] > 0 {
				positions = append(positions, i)
			}
		}
		if positions != nil && len(positions) <= len(types)/4 {
			l.offering[d] = newOfferedTypes(types, positions)
		}
	}
}

// scarcest returns the types offering the resource used+extra needs that fewest types offer, or nil when
// it needs none that only some types offer.
func (l *typeList) scarcest(used, extra vec) *offeredTypes {
	var best *offeredTypes
	for d, o := range l.offering {
		if o != nil && used[d]+extra[d] > 0 && (best == nil || len(o.positions) < len(best.positions)) {
			best = o
		}
	}
	return best
}

// poolInfo is a NodePool parsed once.
type poolInfo struct {
	np     *v1.NodePool
	name   string
	weight int32
	reqs   scheduling.Requirements
	taints []corev1.Taint
	// types compatible with the pool, cheapest first under the pool's requirements.
	types []pricedType
	// daemonPorts is set when the DaemonSets of some type hold host ports.
	daemonPorts bool
	hasLimit    []bool
	limited     bool // any limit set
	limits      vec
	invalid     string
	// domains caches, per label key, the values the pool's types offer within the pool's requirements.
	domains map[string][]string
}

// domainValues lists the values of key a claim from this pool could take under reqs, sorted.
func (p *poolInfo) domainValues(key string, reqs scheduling.Requirements) []string {
	all, ok := p.domains[key]
	if !ok {
		all = p.computeDomains(key)
	}
	r, constrained := reqs[key]
	if !constrained {
		return all
	}
	var out []string
	for _, v := range all {
		if r.Has(v) {
			out = append(out, v)
		}
	}
	return out
}

// precomputeDomains fills the domain cache for the keys solves will ask about, before runs start (runs
// then only read it, so they may proceed in parallel).
func (p *poolInfo) precomputeDomains(keys []string) {
	p.domains = map[string][]string{}
	for _, k := range keys {
		p.domains[k] = p.computeDomains(k)
	}
}

func (p *poolInfo) computeDomains(key string) []string {
	var all []string
	within := p.reqs.Get(key)
	for _, t := range p.types {
		for _, v := range t.it.Requirements.Get(key).Values() {
			if within.Has(v) {
				all = append(all, v)
			}
		}
	}
	slices.Sort(all)
	return slices.Compact(all)
}

func newPoolInfos(in Input, dims *resourceDims, daemons []*daemonInfo, compat scheduling.CompatibilityOptions) []*poolInfo {
	var pools []*poolInfo
	for _, np := range in.NodePools {
		pools = append(pools, newPoolInfo(np, in.InstanceTypes[np.Name], dims, daemons, compat))
	}
	// Highest weight first; ties go to the name later in the alphabet (Karpenter's OrderByWeight).
	slices.SortStableFunc(pools, func(a, b *poolInfo) int {
		return cmp.Or(cmp.Compare(b.weight, a.weight), cmp.Compare(b.name, a.name))
	})
	return pools
}

func newPoolInfo(np *v1.NodePool, its cloudprovider.InstanceTypes, dims *resourceDims, daemons []*daemonInfo, compat scheduling.CompatibilityOptions) *poolInfo {
	p := &poolInfo{np: np, name: np.Name, taints: np.Spec.Template.Spec.Taints}
	if np.Spec.Weight != nil {
		p.weight = *np.Spec.Weight
	}
	if err := scheduling.ValidateNodePoolKeys(np.Spec.Template.Spec.Requirements); err != nil {
		p.invalid = err.Error()
	}
	reqs, err := scheduling.FromNodePoolRequirements(np.Spec.Template.Spec.Requirements)
	if err != nil {
		p.invalid = err.Error()
		reqs = scheduling.Requirements{}
	}
	reqs = reqs.Intersection(scheduling.FromLabels(np.Spec.Template.Labels))
	reqs.Add(scheduling.MustRequirement(v1.NodePoolLabelKey, corev1.NodeSelectorOpIn, np.Name))
	p.reqs = reqs
	options := toOptions(its, dims)
	p.daemonPorts = p.applyDaemons(options, daemons, compat)
	p.types = priceTypes(options, reqs)
	p.limits = dims.vec(corev1.ResourceList(np.Spec.Limits))
	p.hasLimit = make([]bool, len(dims.names))
	for name := range np.Spec.Limits {
		if i, ok := dims.index[name]; ok {
			p.hasLimit[i], p.limited = true, true
		}
	}
	return p
}

func toOptions(its cloudprovider.InstanceTypes, dims *resourceDims) []*typeOption {
	out := make([]*typeOption, 0, len(its))
	noDaemons := make(vec, len(dims.names)) // shared: daemons vectors are only ever replaced, never written
	for _, it := range its {
		capacity := dims.vec(it.Capacity)
		alloc := capacity.clone()
		for _, overhead := range []corev1.ResourceList{it.Overhead.KubeReserved, it.Overhead.SystemReserved, it.Overhead.EvictionThreshold} {
			for i, amount := range dims.vec(overhead) {
				alloc[i] = max(0, alloc[i]-amount)
			}
		}
		out = append(out, &typeOption{it: it, alloc: alloc, capacity: capacity, daemons: noDaemons})
	}
	return out
}

// priceTypes keeps the types compatible with reqs that have an available offering it allows, priced at the
// cheapest such offering and sorted by price, then name.
func priceTypes[T interface{ option() *typeOption }](types []T, reqs scheduling.Requirements) []pricedType {
	out := make([]pricedType, 0, len(types))
	for _, t := range types {
		o := t.option()
		if o.it.Requirements.Intersects(reqs) != nil {
			continue
		}
		price := cheapestPrice(o.it.Offerings, reqs)
		if price < 0 {
			continue
		}
		out = append(out, pricedType{typeOption: o, price: price})
	}
	slices.SortStableFunc(out, func(a, b pricedType) int {
		return cmp.Or(cmp.Compare(a.price, b.price), cmp.Compare(a.it.Name, b.it.Name))
	})
	indexList(out)
	return out
}

func (t *typeOption) option() *typeOption { return t }
func (t pricedType) option() *typeOption  { return t.typeOption }

// cheapestPrice is the lowest price of an available offering the requirements allow, or -1.
func cheapestPrice(offerings cloudprovider.Offerings, reqs scheduling.Requirements) float64 {
	best := -1.0
	for _, o := range offerings {
		if o.Available && o.IsCompatible(reqs) && (best < 0 || o.Price < best) {
			best = o.Price
		}
	}
	return best
}
