package checker

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
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
	rules, minValues, ok := rulesWithMinValues(nc.Requirements)
	if !ok {
		c.fail("claim %s: invalid requirements %v", nc.Name, nc.Requirements)
		return
	}
	poolRules := c.poolRules(pool)
	for k, want := range poolRules {
		if have, ok := rules[k]; !ok || !within(have, want) {
			c.fail("claim %s: requirement on %s allows what the nodepool doesn't", nc.Name, k)
		}
	}
	n := &node{name: nc.Name, taints: pool.Spec.Template.Spec.Taints, requests: corev1.ResourceList{}, rules: rules}
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
		typeRules := c.typeRules(it)
		for k, have := range typeRules {
			if want, ok := rules[k]; ok && !overlap(have, want) {
				c.fail("claim %s: instance type %s is incompatible with its requirement on %s", nc.Name, it.Name, k)
			}
		}
		daemons := c.daemonSets(pool, poolRules, typeRules)
		withDaemons := corev1.ResourceList{}
		addLists(withDaemons, n.requests)
		addLists(withDaemons, daemons.requests)
		if !fits(withDaemons, it.Allocatable()) {
			c.fail("claim %s: pods and daemonsets %v don't fit instance type %s (allocatable %v)", nc.Name, withDaemons, it.Name, it.Allocatable())
		}
		c.checkPorts(&node{name: nc.Name + " as " + it.Name, ports: append(append([]corev1.ContainerPort{}, n.ports...), daemons.ports...)})
		price := priceOf(it, rules)
		if math.IsInf(price, 1) {
			c.fail("claim %s: instance type %s has no available offering its requirements allow", nc.Name, it.Name)
		}
		if price < prev-1e-12 {
			c.fail("claim %s: instance types not cheapest first (%s at %.4f after %.4f)", nc.Name, it.Name, price, prev)
		}
		prev = price
		bound := rules.and(typeRules)
		labels := nodeLabels(nc.Name, pool.Name, bound)
		for _, pod := range n.pods {
			c.checkPodOnNode(pod, n, labels, bound)
		}
	}
	if !nc.MinValuesRelaxed {
		c.checkMinValues(nc, rules, minValues)
	}
	if first := priceOf(nc.InstanceTypes[0], rules); math.Abs(first-nc.PricePerHour) > 1e-9 {
		c.fail("claim %s: price %.6f, cheapest offering of %s is %.6f", nc.Name, nc.PricePerHour, nc.InstanceTypes[0].Name, first)
	}
	n.labels = nodeLabels(nc.Name, pool.Name, rules)
	c.addNode(n)
}

// checkMinValues: for each key with minValues, the listed types offer at least that many distinct values
// the claim allows.
func (c *checker) checkMinValues(nc *solver.NodeClaimPlan, rules labelRules, minValues map[string]int) {
	for k, want := range minValues {
		distinct := map[string]bool{}
		for _, it := range nc.InstanceTypes {
			values, _ := c.typeRules(it)[k].finite()
			for _, v := range values {
				if rules[k].has(v) {
					distinct[v] = true
				}
			}
		}
		if len(distinct) < want {
			c.fail("claim %s: minValues %d for %s, its instance types offer %d", nc.Name, want, k, len(distinct))
		}
	}
}

// typeRules reads an instance type's requirements in API form, once per type.
func (c *checker) typeRules(it *cloudprovider.InstanceType) labelRules {
	if rules, ok := c.types[it]; ok {
		return rules
	}
	rules, _, _ := rulesWithMinValues(it.Requirements.NodeSelectorRequirements())
	c.types[it] = rules
	return rules
}

// poolRules are the pool's requirements and template labels.
func (c *checker) poolRules(pool *v1.NodePool) labelRules {
	rules, _, ok := rulesWithMinValues(pool.Spec.Template.Spec.Requirements)
	if !ok {
		c.fail("nodepool %s: invalid requirements", pool.Name)
	}
	return rules.and(rulesOfLabels(pool.Spec.Template.Labels))
}

// nodeLabels are the labels a node launched for the claim under these rules certainly has.
func nodeLabels(name, pool string, rules labelRules) map[string]string {
	labels := rules.single()
	labels[v1.NodePoolLabelKey] = pool
	labels[v1.LabelHostname] = name
	return labels
}

// daemonLoad is what the DaemonSets running on a node take: their requests and host ports.
type daemonLoad struct {
	requests corev1.ResourceList
	ports    []corev1.ContainerPort
}

// daemonSets sums the DaemonSets whose pods would run on a node of the instance type from the pool: those
// tolerating its taints and startup taints with a node term both the pool's nodes and the type may meet.
// A key the pool doesn't constrain may be met when it is well known (the instance type or the cloud sets
// it) or when the term accepts its absence; a key the type has must overlap the term's values.
func (c *checker) daemonSets(pool *v1.NodePool, poolRules, typeRules labelRules) daemonLoad {
	load := daemonLoad{requests: corev1.ResourceList{}}
	taints := append(append([]corev1.Taint{}, pool.Spec.Template.Spec.Taints...), pool.Spec.Template.Spec.StartupTaints...)
	withPool := poolRules.and(rulesOfLabels(map[string]string{v1.NodePoolLabelKey: pool.Name}))
	wellKnown := v1.WellKnownLabels()
	mayMeet := func(term labelRules) bool {
		for k, want := range term {
			if have, ok := withPool[k]; ok {
				if !overlap(have, want) {
					return false
				}
			} else if !want.absent && !wellKnown[k] {
				return false
			}
		}
		return true
	}
	for _, ds := range c.in.DaemonSets {
		pod := &corev1.Pod{ObjectMeta: ds.Spec.Template.ObjectMeta, Spec: ds.Spec.Template.Spec}
		if _, refused := untolerated(pod.Spec.Tolerations, taints); refused {
			continue
		}
		terms, err := nodeTerms(pod)
		if err != nil {
			continue
		}
		for _, t := range terms {
			if mayMeet(t) && typeMeets(typeRules, t) {
				addLists(load.requests, requestsOf(pod))
				load.ports = append(load.ports, hostPorts(pod)...)
				break
			}
		}
	}
	return load
}

// typeMeets reports whether every key of the term that the type has overlaps the type's values.
func typeMeets(typeRules, term labelRules) bool {
	for k, want := range term {
		if have, ok := typeRules[k]; ok && !overlap(have, want) {
			return false
		}
	}
	return true
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

// volumeRules re-derives the zone rules of a pod's volumes.
func (c *checker) volumeRules(pod *corev1.Pod) labelRules {
	out := labelRules{}
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim == nil {
			continue
		}
		for _, claim := range c.in.Volumes.Claims {
			if claim.Namespace != pod.Namespace || claim.Name != vol.PersistentVolumeClaim.ClaimName {
				continue
			}
			out = out.and(c.claimRules(claim))
		}
	}
	return out
}

func (c *checker) claimRules(claim *corev1.PersistentVolumeClaim) labelRules {
	if claim.Spec.VolumeName != "" {
		for _, pv := range c.in.Volumes.Volumes {
			if pv.Name == claim.Spec.VolumeName && pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil && len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) > 0 {
				rules, _ := rulesOf(pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions)
				return rules
			}
		}
		return nil
	}
	for _, sc := range c.in.Volumes.StorageClasses {
		if claim.Spec.StorageClassName != nil && sc.Name == *claim.Spec.StorageClassName && len(sc.AllowedTopologies) > 0 {
			out := labelRules{}
			for _, e := range sc.AllowedTopologies[0].MatchLabelExpressions {
				out.add(e.Key, allowed{values: set(e.Values)})
			}
			return out
		}
	}
	return nil
}
