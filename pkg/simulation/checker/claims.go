package checker

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

func (c *checker) checkClaims() {
	total := 0.0
	for i := range c.plan.NodeClaims {
		nc := &c.plan.NodeClaims[i]
		total += nc.PricePerHour
		c.checkClaim(nc)
	}
	if math.Abs(total-c.plan.PricePerHour) > 1e-6*math.Max(1, total) {
		c.fail("plan price %.6f is not the sum of its claims %.6f", c.plan.PricePerHour, total)
	}
}

func (c *checker) checkClaim(nc *solver.NodeClaimPlan) {
	pool, ok := c.pools[nc.NodePool]
	if !ok {
		c.fail("claim %s: unknown nodepool %q", nc.Name, nc.NodePool)
		return
	}
	if len(nc.InstanceTypes) == 0 || len(nc.InstanceTypes) > c.opts.MaxInstanceTypes {
		c.fail("claim %s: %d instance types, want 1..%d", nc.Name, len(nc.InstanceTypes), c.opts.MaxInstanceTypes)
		return
	}
	reqs, err := scheduling.FromNodePoolRequirements(nc.Requirements)
	if err != nil {
		c.fail("claim %s: %v", nc.Name, err)
		return
	}
	poolReqs, _ := scheduling.FromNodePoolRequirements(pool.Spec.Template.Spec.Requirements)
	poolReqs = poolReqs.Intersection(scheduling.FromLabels(pool.Spec.Template.Labels))
	for _, k := range poolReqs.Keys() {
		if !reqs.Has(k) || reqs[k].Intersection(poolReqs[k]).String() != reqs[k].String() {
			c.fail("claim %s: requirement %s %s is not within the nodepool's %s", nc.Name, k, reqs.Get(k), poolReqs[k])
		}
	}
	n := &node{name: nc.Name, taints: pool.Spec.Template.Spec.Taints, requests: corev1.ResourceList{}, reqs: reqs}
	for _, ref := range nc.Pods {
		if pod := c.pods[ref]; pod != nil {
			n.add(pod)
		} else {
			c.fail("claim %s: unknown pod %s", nc.Name, ref)
		}
	}
	c.checkPorts(n)
	prev := -1.0
	for _, it := range nc.InstanceTypes {
		if err := it.Requirements.Intersects(reqs); err != nil {
			c.fail("claim %s: instance type %s is incompatible with its requirements: %v", nc.Name, it.Name, err)
		}
		daemons := c.daemonSets(pool, poolReqs, it)
		withDaemons := corev1.ResourceList{}
		addLists(withDaemons, n.requests)
		addLists(withDaemons, daemons.requests)
		if !fits(withDaemons, it.Allocatable()) {
			c.fail("claim %s: pods and daemonsets %v don't fit instance type %s (allocatable %v)", nc.Name, withDaemons, it.Name, it.Allocatable())
		}
		c.checkPorts(&node{name: nc.Name + " as " + it.Name, ports: append(append([]corev1.ContainerPort{}, n.ports...), daemons.ports...)})
		price := priceOf(it, reqs)
		if math.IsInf(price, 1) {
			c.fail("claim %s: instance type %s has no available offering its requirements allow", nc.Name, it.Name)
		}
		if price < prev-1e-12 {
			c.fail("claim %s: instance types not cheapest first (%s at %.4f after %.4f)", nc.Name, it.Name, price, prev)
		}
		prev = price
		labels := typeLabels(nc.Name, pool.Name, reqs, it.Requirements)
		bound := reqs.Intersection(it.Requirements)
		for _, pod := range n.pods {
			c.checkPodOnNode(pod, n, labels, bound)
		}
	}
	if !nc.MinValuesRelaxed {
		var listed []scheduling.Requirements
		for _, it := range nc.InstanceTypes {
			listed = append(listed, it.Requirements)
		}
		if err := reqs.CheckMinValues(listed); err != nil {
			c.fail("claim %s: %v", nc.Name, err)
		}
	}
	if first := priceOf(nc.InstanceTypes[0], reqs); math.Abs(first-nc.PricePerHour) > 1e-9 {
		c.fail("claim %s: price %.6f, cheapest offering of %s is %.6f", nc.Name, nc.PricePerHour, nc.InstanceTypes[0].Name, first)
	}
	n.labels = typeLabels(nc.Name, pool.Name, reqs, nil)
	c.addNode(n)
}

// typeLabels are the labels a node launched for the claim as this type certainly has.
func typeLabels(name, pool string, claim, instanceType scheduling.Requirements) map[string]string {
	labels := claim.Intersection(instanceType).Labels()
	labels[v1.NodePoolLabelKey] = pool
	labels[v1.LabelHostname] = name
	return labels
}

// daemonLoad is what the DaemonSets running on a node take: their requests and host ports.
type daemonLoad struct {
	requests corev1.ResourceList
	ports    []corev1.ContainerPort
}

// daemonSets sums the DaemonSets whose pods would run on a node of the instance type from the pool: they
// tolerate its taints and startup taints, and one of their node selector terms fits both the pool's
// requirements (labels it leaves to instance types allowed) and the type's labels.
func (c *checker) daemonSets(pool *v1.NodePool, poolReqs scheduling.Requirements, it *cloudprovider.InstanceType) daemonLoad {
	load := daemonLoad{requests: corev1.ResourceList{}}
	taints := append(append([]corev1.Taint{}, pool.Spec.Template.Spec.Taints...), pool.Spec.Template.Spec.StartupTaints...)
	withPool := poolReqs.Clone()
	withPool.Add(scheduling.MustRequirement(v1.NodePoolLabelKey, corev1.NodeSelectorOpIn, pool.Name))
	for _, ds := range c.in.DaemonSets {
		pod := &corev1.Pod{ObjectMeta: ds.Spec.Template.ObjectMeta, Spec: ds.Spec.Template.Spec}
		if scheduling.Tolerates(pod.Spec.Tolerations, taints, false) != nil {
			continue
		}
		terms, err := scheduling.PodRequirements(pod)
		if err != nil {
			continue
		}
		for _, t := range terms {
			if withPool.Compatible(t, scheduling.AllowUndefinedWellKnown()) == nil && it.Requirements.Intersects(t) == nil {
				addLists(load.requests, scheduling.PodRequests(pod))
				load.ports = append(load.ports, hostPorts(pod)...)
				break
			}
		}
	}
	return load
}

func hostPorts(p *corev1.Pod) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, ctr := range list {
			for _, port := range ctr.Ports {
				if port.HostPort > 0 {
					out = append(out, port)
				}
			}
		}
	}
	return out
}

// checkLimits: each pool's existing, in-flight and planned capacity stays within its limits.
func (c *checker) checkLimits() {
	for _, name := range sortedNames(c.pools) {
		pool := c.pools[name]
		if len(pool.Spec.Limits) == 0 {
			continue
		}
		usage := corev1.ResourceList{}
		for _, n := range c.in.Nodes {
			if n.Node.Labels[v1.NodePoolLabelKey] == name {
				addLists(usage, n.Node.Status.Capacity)
			}
		}
		for _, f := range c.in.InFlight {
			if f.NodeClaim.Labels[v1.NodePoolLabelKey] == name {
				addLists(usage, f.NodeClaim.Status.Capacity)
			}
		}
		for _, nc := range c.plan.NodeClaims {
			if nc.NodePool == name && len(nc.InstanceTypes) > 0 {
				addLists(usage, nc.InstanceTypes[0].Capacity)
			}
		}
		for resourceName, limit := range pool.Spec.Limits {
			if used, ok := usage[resourceName]; ok && used.Cmp(limit) > 0 {
				c.fail("nodepool %s: %s in use %s exceeds limit %s", name, resourceName, used.String(), limit.String())
			}
		}
	}
}

// volumeRequirements re-derives the zone requirements of a pod's volumes.
func (c *checker) volumeRequirements(pod *corev1.Pod) scheduling.Requirements {
	out := scheduling.Requirements{}
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim == nil {
			continue
		}
		for _, claim := range c.in.Volumes.Claims {
			if claim.Namespace != pod.Namespace || claim.Name != vol.PersistentVolumeClaim.ClaimName {
				continue
			}
			out = out.Intersection(c.claimRequirements(claim))
		}
	}
	return out
}

func (c *checker) claimRequirements(claim *corev1.PersistentVolumeClaim) scheduling.Requirements {
	if claim.Spec.VolumeName != "" {
		for _, pv := range c.in.Volumes.Volumes {
			if pv.Name == claim.Spec.VolumeName && pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil && len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) > 0 {
				reqs, _ := scheduling.FromNodeSelectorRequirements(pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions)
				return reqs
			}
		}
		return nil
	}
	for _, sc := range c.in.Volumes.StorageClasses {
		if claim.Spec.StorageClassName != nil && sc.Name == *claim.Spec.StorageClassName && len(sc.AllowedTopologies) > 0 {
			out := scheduling.Requirements{}
			for _, e := range sc.AllowedTopologies[0].MatchLabelExpressions {
				out.Add(scheduling.MustRequirement(e.Key, corev1.NodeSelectorOpIn, e.Values...))
			}
			return out
		}
	}
	return nil
}
