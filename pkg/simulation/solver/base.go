package solver

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Base is an Input prepared once for many solves that each remove some of its existing nodes and place
// some of its pods: the question consolidation asks of every set of candidate nodes. Base.Solve gives the
// Plan Solve would give for that variant of the Input; it only saves parsing the pods bound to the nodes
// that stay, again and again. A Base is read-only once built, and safe for concurrent use.
type Base struct {
	in   Input
	opts Options
	// prep is the whole Input prepared, its pods as pending; nil when a variant's preparation could differ
	// from it (topology constraints, extended resources), and then every variant is solved from scratch.
	prep *prepared
	// pending finds the parsed pod of each of in.Pods.
	pending map[*corev1.Pod]*podInfo
	// nodeOf is the index in prep.nodes of each existing node, by name.
	nodeOf map[string]int
	// capacityOf is what each existing node counts toward its NodePool's limits, nil when it has none.
	capacityOf []vec
	poolOf     []*poolInfo
}

// NewBase prepares the Input: in.Nodes are every node a variant may keep and in.Pods every pod a variant
// may place. Its variants are plans made from nothing: in.EarlierPlaces is left out.
func NewBase(in Input, opts Options) *Base {
	opts = opts.withDefaults()
	in.EarlierPlaces = nil
	b := &Base{in: in, opts: opts}
	prep := prepareSharing(in, opts, true)
	// The parts of a preparation that depend on which pods and nodes are in it are its resource dimensions
	// (the pods' requests, the nodes' pods' usage) and its topology groups and domains: without extended
	// resources or topology constraints they are the same for every variant, so this one can be reused.
	if len(prep.topo.groups) > 0 || len(prep.dims.names) > len(newResourceDims(nil).names) {
		return b
	}
	prep.parsed = nil
	b.prep, b.pending = prep, make(map[*corev1.Pod]*podInfo, len(prep.pods))
	for _, p := range prep.pods {
		b.pending[p.pod] = p
	}
	poolByName := map[string]*poolInfo{}
	for _, p := range prep.pools {
		poolByName[p.name] = p
	}
	nodes := len(in.Nodes)
	b.nodeOf = make(map[string]int, nodes)
	b.capacityOf, b.poolOf = make([]vec, nodes), make([]*poolInfo, nodes)
	byName := make(map[string]*corev1.Node, nodes)
	for _, n := range in.Nodes {
		byName[n.Node.Name] = n.Node
	}
	if len(byName) < nodes {
		b.prep = nil // nodes sharing a name can't be told apart
		return b
	}
	for i, t := range prep.nodes[:nodes] {
		b.nodeOf[t.name] = i
		node := byName[t.name]
		if pool, ok := poolByName[node.Labels[v1.NodePoolLabelKey]]; ok {
			b.poolOf[i], b.capacityOf[i] = pool, prep.dims.vec(node.Status.Capacity)
		}
	}
	// Without topology groups a bound pod brings a run nothing its target does not already hold (its
	// requests in used, its host ports in ports): variants leave the bound pods out.
	prep.bound, prep.boundOn, prep.waiting = nil, nil, nil
	return b
}

// Solve places pods (each one of the Base's Input.Pods) with the named existing nodes gone: the Plan is
// Solve's for the Base's Input without those nodes and with pods as its pods.
func (b *Base) Solve(ctx context.Context, without []string, pods []*corev1.Pod) (*Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("solving, %w", err)
	}
	prep, ok := b.variant(without, pods)
	if !ok {
		in := b.in
		gone := make(map[string]bool, len(without))
		for _, name := range without {
			gone[name] = true
		}
		in.Nodes = slices.DeleteFunc(slices.Clone(in.Nodes), func(n ExistingNode) bool { return gone[n.Node.Name] })
		in.Pods = pods
		return Solve(ctx, in, b.opts)
	}
	return solvePrepared(ctx, prep)
}

// variant is the preparation Solve would make of the variant, built from the Base's: the pods are copied
// to carry their index in the variant, where it differs from the Base's. It reports false when the Base
// can't serve the variant.
func (b *Base) variant(without []string, pods []*corev1.Pod) (*prepared, bool) {
	if b.prep == nil {
		return nil, false
	}
	base := b.prep
	prep := &prepared{opts: base.opts, dims: base.dims, topo: base.topo, pools: base.pools, compat: base.compat,
		poolUsage: make(map[*poolInfo]vec, len(base.poolUsage))}
	prep.pods = make([]*podInfo, 0, len(pods))
	for i, pod := range pods {
		p, ok := b.pending[pod]
		if !ok {
			return nil, false
		}
		if p.index != i { // a variant placing a prefix of the Base's pods uses them as they are
			c := *p
			c.index = i
			p = &c
		}
		prep.pods = append(prep.pods, p)
	}
	gone := make([]bool, len(base.nodes))
	for pool, usage := range base.poolUsage {
		prep.poolUsage[pool] = usage.clone()
	}
	for _, name := range without {
		i, ok := b.nodeOf[name]
		if !ok || gone[i] {
			continue
		}
		gone[i] = true
		if pool := b.poolOf[i]; pool != nil {
			prep.poolUsage[pool] = subVec(prep.poolUsage[pool], b.capacityOf[i])
		}
	}
	// The targets are the Base's own (runs copy them, numbering the copies by position).
	prep.nodes = make([]*target, 0, len(base.nodes))
	for i, n := range base.nodes {
		if !gone[i] {
			prep.nodes = append(prep.nodes, n)
		}
	}
	return prep, true
}

// Reuses reports whether variants reuse the Base's preparation (no topology constraints or extended
// resources in the Input); otherwise each variant is solved from scratch, with the same result.
func (b *Base) Reuses() bool { return b.prep != nil }
