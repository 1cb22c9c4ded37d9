package checker

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// bound is a pod on a node during the replay.
type bound struct {
	pod  *corev1.Pod
	node *node
}

type step struct {
	seq  int
	pod  *corev1.Pod
	node *node
}

// checkTopology replays the binding order and checks each pod's required spreads and affinities against
// the pods bound before it (on every node of the final plan, as kube-scheduler would see them).
func (c *checker) checkTopology() {
	var placed []bound
	for _, name := range c.order {
		for _, p := range c.boundPods(name) {
			placed = append(placed, bound{pod: p, node: c.nodes[name]})
		}
	}
	var steps []step
	for _, pl := range c.plan.Placements {
		if n, ok := c.nodes[pl.Target]; ok && c.pods[pl.Pod] != nil {
			steps = append(steps, step{seq: pl.Sequence, pod: c.pods[pl.Pod], node: n})
		}
	}
	for _, nc := range c.plan.NodeClaims {
		n, ok := c.nodes[nc.Name]
		if !ok || len(nc.Sequences) != len(nc.Pods) {
			continue
		}
		for i, r := range nc.Pods {
			if pod := c.pods[r]; pod != nil {
				steps = append(steps, step{seq: nc.Sequences[i], pod: pod, node: n})
			}
		}
	}
	slices.SortStableFunc(steps, func(a, b step) int { return cmp.Compare(a.seq, b.seq) })
	for i := 1; i < len(steps); i++ {
		if steps[i].seq == steps[i-1].seq {
			c.fail("sequence %d used twice", steps[i].seq)
		}
	}
	for _, s := range steps {
		c.checkSpreads(s.pod, s.node, placed)
		c.checkAffinity(s.pod, s.node, placed)
		placed = append(placed, bound{pod: s.pod, node: s.node})
	}
}

// boundPods are the pods already on an existing node or in-flight claim before the plan.
func (c *checker) boundPods(name string) []*corev1.Pod {
	for _, n := range c.in.Nodes {
		if n.Node.Name == name {
			return n.Pods
		}
	}
	for _, f := range c.in.InFlight {
		if f.NodeClaim.Name == name {
			return f.Pods
		}
	}
	return nil
}

func (n *node) domain(key string) (string, bool) {
	if v, ok := n.labels[key]; ok {
		return v, true
	}
	if r, ok := n.rules[key]; ok {
		if values, finite := r.finite(); finite && len(values) == 1 && !r.absent {
			return values[0], true
		}
	}
	return "", false
}

func selectorOf(ls *metav1.LabelSelector, matchLabelKeys []string, podLabels map[string]string) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing()
	}
	extra := map[string]string{}
	for _, k := range matchLabelKeys {
		if v, ok := podLabels[k]; ok {
			extra[k] = v
		}
	}
	if len(extra) == 0 {
		return sel
	}
	reqs, _ := labels.SelectorFromSet(extra).Requirements()
	return sel.Add(reqs...)
}

func (c *checker) checkSpreads(pod *corev1.Pod, n *node, placed []bound) {
	terms, _ := nodeTerms(pod)
	for _, tsc := range pod.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		domain, ok := n.domain(tsc.TopologyKey)
		if !ok {
			c.fail("pod %s on %s: node has no %s for its topology spread", ref(pod), n.name, tsc.TopologyKey)
			continue
		}
		sel := selectorOf(tsc.LabelSelector, tsc.MatchLabelKeys, pod.Labels)
		honorAffinity := tsc.NodeAffinityPolicy == nil || *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
		honorTaints := tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
		counts := map[string]int{}
		eligible := map[*node]bool{}
		for _, name := range c.order {
			m := c.nodes[name]
			d, ok := m.domain(tsc.TopologyKey)
			if !ok {
				continue
			}
			if honorAffinity && !anySatisfied(terms, m) {
				continue
			}
			if _, refused := untolerated(pod.Spec.Tolerations, m.taints); honorTaints && refused {
				continue
			}
			eligible[m] = true
			if _, seen := counts[d]; !seen {
				counts[d] = 0
			}
		}
		for _, b := range placed {
			if !eligible[b.node] || b.pod.Namespace != pod.Namespace || !sel.Matches(labels.Set(b.pod.Labels)) {
				continue
			}
			d, _ := b.node.domain(tsc.TopologyKey)
			counts[d]++
		}
		minimum := -1
		for _, v := range counts {
			if minimum < 0 || v < minimum {
				minimum = v
			}
		}
		minDomains := 1
		if tsc.MinDomains != nil {
			minDomains = int(*tsc.MinDomains)
		}
		if minimum < 0 || len(counts) < minDomains {
			minimum = 0
		}
		self := 0
		if sel.Matches(labels.Set(pod.Labels)) {
			self = 1
		}
		if skew := counts[domain] + self - minimum; skew > int(tsc.MaxSkew) {
			c.fail("pod %s on %s: topology spread on %s has skew %d > %d", ref(pod), n.name, tsc.TopologyKey, skew, tsc.MaxSkew)
		}
	}
}

func anySatisfied(terms []labelRules, n *node) bool {
	for _, t := range terms {
		if satisfies(t, n.labels, n.rules) {
			return true
		}
	}
	return false
}

func inNamespaces(term *corev1.PodAffinityTerm, owner *corev1.Pod, candidate *corev1.Pod) bool {
	if term.NamespaceSelector != nil && len(term.NamespaceSelector.MatchLabels) == 0 && len(term.NamespaceSelector.MatchExpressions) == 0 {
		return true
	}
	if len(term.Namespaces) > 0 {
		return slices.Contains(term.Namespaces, candidate.Namespace)
	}
	return candidate.Namespace == owner.Namespace
}

func (c *checker) checkAffinity(pod *corev1.Pod, n *node, placed []bound) {
	if a := pod.Spec.Affinity; a != nil && a.PodAffinity != nil {
		for i := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			term := &a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
			sel := selectorOf(term.LabelSelector, term.MatchLabelKeys, pod.Labels)
			domain, ok := n.domain(term.TopologyKey)
			matchesAnywhere, matchesHere := false, false
			for _, b := range placed {
				if !inNamespaces(term, pod, b.pod) || !sel.Matches(labels.Set(b.pod.Labels)) {
					continue
				}
				matchesAnywhere = true
				if d, has := b.node.domain(term.TopologyKey); ok && has && d == domain {
					matchesHere = true
				}
			}
			self := inNamespaces(term, pod, pod) && sel.Matches(labels.Set(pod.Labels))
			if !ok || (!matchesHere && (matchesAnywhere || !self)) {
				c.fail("pod %s on %s: required pod affinity on %s not met", ref(pod), n.name, term.TopologyKey)
			}
		}
	}
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			term := &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
			sel := selectorOf(term.LabelSelector, term.MatchLabelKeys, pod.Labels)
			domain, ok := n.domain(term.TopologyKey)
			if !ok {
				continue
			}
			for _, b := range placed {
				if d, has := b.node.domain(term.TopologyKey); has && d == domain && inNamespaces(term, pod, b.pod) && sel.Matches(labels.Set(b.pod.Labels)) {
					c.fail("pod %s on %s: required anti-affinity on %s violated by %s", ref(pod), n.name, term.TopologyKey, ref(b.pod))
					break
				}
			}
		}
	}
	// Anti-affinity is symmetric: pods already bound may refuse this one.
	for _, b := range placed {
		a := b.pod.Spec.Affinity
		if a == nil || a.PodAntiAffinity == nil {
			continue
		}
		for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			term := &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
			d1, ok1 := b.node.domain(term.TopologyKey)
			d2, ok2 := n.domain(term.TopologyKey)
			if !ok1 || !ok2 || d1 != d2 || !inNamespaces(term, b.pod, pod) {
				continue
			}
			if selectorOf(term.LabelSelector, term.MatchLabelKeys, b.pod.Labels).Matches(labels.Set(pod.Labels)) {
				c.fail("pod %s on %s: anti-affinity of %s on %s refuses it", ref(pod), n.name, ref(b.pod), term.TopologyKey)
			}
		}
	}
}
