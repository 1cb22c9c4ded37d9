package checker

import (
	"errors"
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// Options are the limits the plan was made under.
type Options struct {
	// MaxInstanceTypes per NodeClaim. Default 60.
	MaxInstanceTypes int
}

// node is a placed-on host as the checker sees it: existing, in-flight or planned.
type node struct {
	name        string
	labels      map[string]string // labels known for certain
	rules       labelRules        // for planned claims: what the label values may be
	taints      []corev1.Taint
	allocatable corev1.ResourceList // nil for planned claims (checked per instance type)
	requests    corev1.ResourceList
	ports       []corev1.ContainerPort
	pods        []*corev1.Pod
	cordoned    bool
}

// Check returns every violation found, joined, or nil for a valid plan.
func Check(in solver.Input, plan *solver.Plan, opts Options) error {
	if opts.MaxInstanceTypes <= 0 {
		opts.MaxInstanceTypes = 60
	}
	c := &checker{in: in, plan: plan, opts: opts, pods: map[solver.PodRef]*corev1.Pod{}, nodes: map[string]*node{}, pools: map[string]*v1.NodePool{},
		types: map[*cloudprovider.InstanceType]labelRules{}}
	c.index()
	c.checkCoverage()
	c.checkExisting()
	c.checkClaims()
	c.checkLimits()
	c.checkTopology()
	return errors.Join(c.problems...)
}

type checker struct {
	in       solver.Input
	plan     *solver.Plan
	opts     Options
	pods     map[solver.PodRef]*corev1.Pod
	nodes    map[string]*node
	order    []string // node names in a fixed order
	pools    map[string]*v1.NodePool
	problems []error
	types    map[*cloudprovider.InstanceType]labelRules
}

func (c *checker) fail(format string, args ...any) {
	c.problems = append(c.problems, fmt.Errorf(format, args...))
}

func ref(p *corev1.Pod) solver.PodRef { return solver.PodRef{Namespace: p.Namespace, Name: p.Name} }

func (c *checker) index() {
	for _, p := range c.in.Pods {
		c.pods[ref(p)] = p
	}
	for _, np := range c.in.NodePools {
		c.pools[np.Name] = np
	}
	for _, n := range c.in.Nodes {
		nd := &node{name: n.Node.Name, labels: n.Node.Labels, taints: n.Node.Spec.Taints, allocatable: n.Node.Status.Allocatable, requests: corev1.ResourceList{},
			cordoned: n.Node.Spec.Unschedulable || n.Node.DeletionTimestamp != nil}
		for _, p := range n.Pods {
			nd.add(p)
		}
		c.addNode(nd)
	}
	for _, f := range c.in.InFlight {
		rules, _, _ := rulesWithMinValues(f.NodeClaim.Spec.Requirements)
		labels := rules.and(rulesOfLabels(f.NodeClaim.Labels)).single()
		labels[v1.LabelHostname] = f.NodeClaim.Name
		nd := &node{name: f.NodeClaim.Name, labels: labels, taints: f.NodeClaim.Spec.Taints, allocatable: f.NodeClaim.Status.Allocatable, requests: corev1.ResourceList{}}
		for _, p := range f.Pods {
			nd.add(p)
		}
		c.addNode(nd)
	}
}

func (c *checker) addNode(n *node) {
	if _, dup := c.nodes[n.name]; dup {
		c.fail("node name %q used twice", n.name)
		return
	}
	c.nodes[n.name] = n
	c.order = append(c.order, n.name)
}

func (n *node) add(p *corev1.Pod) {
	addLists(n.requests, requestsOf(p))
	n.ports = append(n.ports, hostPorts(p)...)
	n.pods = append(n.pods, p)
}

// checkCoverage: every pod is placed once, on a claim, or reported with reasons; nothing else appears.
func (c *checker) checkCoverage() {
	seen := map[solver.PodRef]int{}
	for _, pl := range c.plan.Placements {
		seen[pl.Pod]++
	}
	for _, nc := range c.plan.NodeClaims {
		for _, p := range nc.Pods {
			seen[p]++
		}
	}
	for _, u := range c.plan.Unschedulable {
		seen[u.Pod]++
		if len(u.Reasons) == 0 {
			c.fail("unschedulable pod %s has no reason", u.Pod)
		}
		for _, r := range u.Reasons {
			if r.Message == "" {
				c.fail("unschedulable pod %s has an empty reason for nodepool %q", u.Pod, r.NodePool)
			}
		}
	}
	for _, p := range c.in.Pods {
		if n := seen[ref(p)]; n != 1 {
			c.fail("pod %s appears %d times in the plan", ref(p), n)
		}
		delete(seen, ref(p))
	}
	for r := range seen {
		c.fail("plan mentions unknown pod %s", r)
	}
}

// checkExisting: pods placed on existing nodes and in-flight claims fit them.
func (c *checker) checkExisting() {
	for _, pl := range c.plan.Placements {
		n, ok := c.nodes[pl.Target]
		pod := c.pods[pl.Pod]
		if !ok || pod == nil {
			c.fail("placement of %s on unknown node %q", pl.Pod, pl.Target)
			continue
		}
		if n.cordoned {
			c.fail("pod %s placed on cordoned node %s", pl.Pod, n.name)
		}
		c.checkPodOnNode(pod, n, n.labels, nil)
		n.add(pod)
	}
	for _, name := range c.order {
		n := c.nodes[name]
		if n.allocatable != nil && !fits(n.requests, n.allocatable) {
			c.fail("node %s: requests %v exceed allocatable %v", name, n.requests, n.allocatable)
		}
		c.checkPorts(n)
	}
}

// checkPodOnNode checks taints and node requirements of a pod against concrete labels (and, for planned
// claims, the rules that bound the labels not yet known).
func (c *checker) checkPodOnNode(pod *corev1.Pod, n *node, labels map[string]string, bound labelRules) {
	if taint, refused := untolerated(pod.Spec.Tolerations, n.taints); refused {
		c.fail("pod %s on %s: taint %s=%s:%s not tolerated", ref(pod), n.name, taint.Key, taint.Value, taint.Effect)
	}
	terms, err := nodeTerms(pod)
	if err != nil {
		c.fail("pod %s: %v", ref(pod), err)
		return
	}
	volume := c.volumeRules(pod)
	for _, t := range terms {
		if satisfies(t.and(volume), labels, bound) {
			return
		}
	}
	c.fail("pod %s on %s: node labels %v satisfy none of its node selector terms", ref(pod), n.name, labels)
}

// satisfies reports whether a node with these labels meets every rule of want. A label the node doesn't
// have for certain may take any value bound allows, or is absent when bound doesn't mention it; every
// such possibility must meet the rule.
func satisfies(want labelRules, labels map[string]string, bound labelRules) bool {
	for k, r := range want {
		if v, ok := labels[k]; ok {
			if !r.has(v) {
				return false
			}
			continue
		}
		if b, ok := bound[k]; ok {
			if !within(b, r) {
				return false
			}
			continue
		}
		if !r.absent {
			return false
		}
	}
	return true
}

func fits(requests, allocatable corev1.ResourceList) bool {
	for name, q := range requests {
		if q.IsZero() {
			continue
		}
		have, ok := allocatable[name]
		if !ok || have.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

func (c *checker) checkPorts(n *node) {
	for i, a := range n.ports {
		for _, b := range n.ports[i+1:] {
			proto := func(p corev1.ContainerPort) corev1.Protocol {
				if p.Protocol == "" {
					return corev1.ProtocolTCP
				}
				return p.Protocol
			}
			wild := func(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }
			if a.HostPort == b.HostPort && proto(a) == proto(b) && (a.HostIP == b.HostIP || wild(a.HostIP) || wild(b.HostIP)) {
				c.fail("node %s: host port %s/%d used twice", n.name, proto(a), a.HostPort)
			}
		}
	}
}

// priceOf is the cheapest available offering of it that the rules allow, or +Inf.
func priceOf(it *cloudprovider.InstanceType, rules labelRules) float64 {
	best := math.Inf(1)
	for _, o := range it.Offerings {
		if !o.Available {
			continue
		}
		if z, ok := rules[v1.LabelTopologyZone]; ok && !z.has(o.Zone) {
			continue
		}
		if ct, ok := rules[v1.CapacityTypeLabelKey]; ok && !ct.has(o.CapacityType) {
			continue
		}
		best = min(best, o.Price)
	}
	return best
}

func addLists(dst, src corev1.ResourceList) {
	for name, q := range src {
		sum := dst[name]
		sum.Add(q)
		dst[name] = sum
	}
}

func sortedNames(m map[string]*v1.NodePool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
