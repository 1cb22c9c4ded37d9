package e2e_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// podKind names the constraint that shapes where the pod may go: its first topology spread key, pod
// anti-affinity, pod affinity, or none.
func podKind(p *corev1.Pod) string {
	switch {
	case len(p.Spec.TopologySpreadConstraints) > 0:
		return "spread:" + p.Spec.TopologySpreadConstraints[0].TopologyKey
	case p.Spec.Affinity != nil && p.Spec.Affinity.PodAntiAffinity != nil:
		return "anti"
	case p.Spec.Affinity != nil && p.Spec.Affinity.PodAffinity != nil:
		return "affinity"
	}
	return "plain"
}

// diagnose logs, for BenchmarkPlanFidelity, the pods off their hinted Node by kind of constraint, how long
// after its Node appeared each NodeClaim was registered (registration's hold), and when each was registered
// relative to the first (seconds).
func diagnose(b *testing.B, ns string, t *hintTracker) {
	ctx := context.Background()
	var pods corev1.PodList
	if err := s.kubeClient.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	t.mu.Lock()
	total, miss, unhinted, overruled := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	for i := range pods.Items {
		p := &pods.Items[i]
		k := podKind(p)
		total[k]++
		if h, ok := t.hint[p.Name]; !ok || h != p.Spec.NodeName {
			miss[k]++
		}
		switch with := t.boundWith[p.Name]; {
		case with == "":
			unhinted[k]++
		case with != p.Spec.NodeName:
			overruled[k]++
		}
	}
	// For a few plain pods the kube-scheduler placed elsewhere than their hint: what their hinted Node holds.
	byNode := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		byNode[pods.Items[i].Spec.NodeName] = append(byNode[pods.Items[i].Spec.NodeName], &pods.Items[i])
	}
	// intruded counts, by kind, the pods bound elsewhere than their hint whose hinted Node holds a pod that was
	// bound there under another hint or none: a pod sent away from its own hint that took the planned room.
	intruded := map[string]int{}
	for i := range pods.Items {
		p := &pods.Items[i]
		with := t.boundWith[p.Name]
		if with == "" || with == p.Spec.NodeName {
			continue
		}
		for _, q := range byNode[with] {
			if t.boundWith[q.Name] != with {
				intruded[podKind(p)]++
				break
			}
		}
	}
	shown := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		with := t.boundWith[p.Name]
		if podKind(p) != "plain" || with == "" || with == p.Spec.NodeName || shown == 3 {
			continue
		}
		shown++
		node := &corev1.Node{}
		_ = s.kubeClient.Get(ctx, client.ObjectKey{Name: with}, node)
		var held []string
		for _, q := range byNode[with] {
			held = append(held, fmt.Sprintf("%s(%s/%s, hinted %q)", q.Name, q.Spec.Containers[0].Resources.Requests.Cpu(), q.Spec.Containers[0].Resources.Requests.Memory(), t.boundWith[q.Name]))
		}
		var hintedThere []string
		for name, h := range t.hint {
			if h == with {
				hintedThere = append(hintedThere, name)
			}
		}
		b.Logf("%s (%s/%s) hinted %s (allocatable cpu %s memory %s pods %s) went to %s; %s holds %v; pods ever hinted there: %v", p.Name,
			p.Spec.Containers[0].Resources.Requests.Cpu(), p.Spec.Containers[0].Resources.Requests.Memory(), with,
			node.Status.Allocatable.Cpu(), node.Status.Allocatable.Memory(), node.Status.Allocatable.Pods(), p.Spec.NodeName, with, held, hintedThere)
	}
	t.mu.Unlock()
	b.Logf("pods by constraint %v, off their hinted node %v", total, miss)
	b.Logf("bound with no hint at the time %v, bound elsewhere than their hint at the time %v, of which their hinted Node took a pod hinted elsewhere or not at all %v", unhinted, overruled, intruded)
	var claims v1.NodeClaimList
	if err := s.kubeClient.List(ctx, &claims); err != nil {
		b.Fatal(err)
	}
	var holds []float64
	var regs []time.Time
	for _, c := range claims.Items {
		node := &corev1.Node{}
		if s.kubeClient.Get(ctx, client.ObjectKey{Name: c.Status.NodeName}, node) != nil {
			continue
		}
		if cond := meta.FindStatusCondition(c.Status.Conditions, v1.ConditionTypeRegistered); cond != nil && cond.Status == metav1.ConditionTrue {
			holds = append(holds, cond.LastTransitionTime.Sub(node.CreationTimestamp.Time).Seconds())
			regs = append(regs, cond.LastTransitionTime.Time)
		}
	}
	overruledBeforeOpen(b, pods.Items, claims.Items, t)
	lateArrivals(b, pods.Items, byNode, claims.Items, t)
	spreadsAtTheirTurn(b, pods.Items, t)
	affinityFirsts(b, pods.Items, t)
	hintedOverSkewIfLast(b, pods.Items, t)
	bindSpreadByNode(b, t)
	sort.Float64s(holds)
	sort.Slice(regs, func(i, j int) bool { return regs[i].Before(regs[j]) })
	var offsets strings.Builder
	for _, r := range regs {
		fmt.Fprintf(&offsets, " %.0f", r.Sub(regs[0]).Seconds())
	}
	b.Logf("hold seconds %v", holds)
	b.Logf("registration offsets%s", offsets.String())
}

// overruledBeforeOpen logs, by kind, the pods bound elsewhere than their hint at the time while the hinted
// Node was not open yet: its NodeClaim not Initialized (Ready, registered, startup and not-ready taints gone).
// The kube-scheduler cannot place a pod on such a Node, so it places the pod wherever else it fits. The
// Initialized time has a resolution of a second, rounded down, so a pod bound in the second its Node opened
// counts as bound after.
func overruledBeforeOpen(b *testing.B, pods []corev1.Pod, claims []v1.NodeClaim, t *hintTracker) {
	opened := map[string]time.Time{}
	for _, c := range claims {
		if cond := meta.FindStatusCondition(c.Status.Conditions, v1.ConditionTypeInitialized); cond != nil && cond.Status == metav1.ConditionTrue {
			opened[c.Status.NodeName] = cond.LastTransitionTime.Time
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// planned sums, by Node, the requests of the pods bound there under a hint to it: what the plan put there.
	planned := map[string]corev1.ResourceList{}
	for i := range pods {
		p := &pods[i]
		if n := p.Spec.NodeName; n != "" && t.boundWith[p.Name] == n {
			if planned[n] == nil {
				planned[n] = corev1.ResourceList{}
			}
			addRequests(planned[n], p)
		}
	}
	early, intoSlack := map[string]int{}, 0
	for i := range pods {
		p := &pods[i]
		with := t.boundWith[p.Name]
		if with == "" || with == p.Spec.NodeName {
			continue
		}
		if at, ok := opened[with]; !ok || t.boundAt[p.Name].Before(at) {
			early[podKind(p)]++
			// Did it take room the plan left free on the Node it went to, or room of pods planned there?
			node := &corev1.Node{}
			if s.kubeClient.Get(context.Background(), client.ObjectKey{Name: p.Spec.NodeName}, node) == nil {
				used := planned[node.Name].DeepCopy()
				if used == nil {
					used = corev1.ResourceList{}
				}
				addRequests(used, p)
				if used.Cpu().Cmp(*node.Status.Allocatable.Cpu()) <= 0 && used.Memory().Cmp(*node.Status.Allocatable.Memory()) <= 0 {
					intoSlack++
				}
			}
		}
	}
	b.Logf("bound elsewhere than their hint at the time, before the hinted Node opened %v; %d of them into room the plan left free where they went", early, intoSlack)
}

// addRequests adds the pod's container requests to l.
func addRequests(l corev1.ResourceList, p *corev1.Pod) {
	for _, c := range p.Spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := l[name]
			sum.Add(q)
			l[name] = sum
		}
	}
}

// lateArrivals logs the pods running on Nodes of NodeClaims created after the first pass (more than 5 s after
// the first NodeClaim), by kind, and for a few of them the Node they were first hinted to and what it holds
// now (byNode: the pods by the Node they run on).
func lateArrivals(b *testing.B, pods []corev1.Pod, byNode map[string][]*corev1.Pod, claims []v1.NodeClaim, t *hintTracker) {
	if len(claims) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	first := claims[0].CreationTimestamp.Time
	for _, c := range claims {
		if c.CreationTimestamp.Time.Before(first) {
			first = c.CreationTimestamp.Time
		}
	}
	late := map[string]bool{}
	for _, c := range claims {
		if c.CreationTimestamp.Time.Sub(first) > 5*time.Second {
			late[c.Status.NodeName] = true
		}
	}
	kinds := map[string]int{}
	var shown []string
	for i := range pods {
		p := &pods[i]
		if !late[p.Spec.NodeName] {
			continue
		}
		kinds[podKind(p)]++
		if len(shown) < 6 {
			hinted := t.first[p.Name]
			var holds []string
			for _, q := range byNode[hinted] {
				holds = append(holds, fmt.Sprintf("%s(%s)", q.Name, podKind(q)))
			}
			shown = append(shown, fmt.Sprintf("%s first hinted %s, which holds %v", p.Name, hinted, holds))
		}
	}
	b.Logf("pods on NodeClaims of later passes, by kind: %v; %s", kinds, strings.Join(shown, "; "))
}

// spreadsAtTheirTurn logs, for the pods with a hard zone spread that were bound elsewhere than their hint,
// how many found their hinted zone over its skew counting the pods bound before them (in the order the
// watch saw the bindings); and how far the binding order is from the creation order (the pods' numbers).
func spreadsAtTheirTurn(b *testing.B, pods []corev1.Pod, t *hintTracker) {
	ctx := context.Background()
	t.mu.Lock()
	defer t.mu.Unlock()
	byName := map[string]*corev1.Pod{}
	// number is each pod's creation number, the suffix of its name (workload.Diverse).
	number := map[string]int{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
		var n int
		if _, err := fmt.Sscanf(pods[i].Name[strings.LastIndex(pods[i].Name, "-")+1:], "%d", &n); err == nil {
			number[pods[i].Name] = n
		}
	}
	zoneOf := map[string]string{}
	zone := func(node string) string {
		if z, ok := zoneOf[node]; ok {
			return z
		}
		n := &corev1.Node{}
		if s.kubeClient.Get(ctx, client.ObjectKey{Name: node}, n) == nil {
			zoneOf[node] = n.Labels[corev1.LabelTopologyZone]
		}
		return zoneOf[node]
	}
	zones := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			zones[zone(p.Spec.NodeName)] = true
		}
	}
	overSkew, overWithNominated, off, inversions, pairs := 0, 0, 0, 0, 0
	position := map[string]int{}
	for i, name := range t.bindOrder {
		position[name] = i
	}
	var bound []*corev1.Pod
	for _, name := range t.bindOrder {
		p := byName[name]
		if p == nil {
			continue
		}
		if n, ok := number[name]; ok {
			for _, q := range bound {
				if m, ok := number[q.Name]; ok {
					pairs++
					if m > n {
						inversions++
					}
				}
			}
		}
		hinted := t.boundWith[name]
		if len(p.Spec.TopologySpreadConstraints) > 0 && p.Spec.TopologySpreadConstraints[0].TopologyKey == corev1.LabelTopologyZone &&
			hinted != "" && hinted != p.Spec.NodeName {
			off++
			c := p.Spec.TopologySpreadConstraints[0]
			selector, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
			if err != nil {
				b.Fatal(err)
			}
			counts := map[string]int{}
			for z := range zones {
				counts[z] = 0
			}
			for _, q := range bound {
				if selector.Matches(labels.Set(q.Labels)) {
					counts[zone(q.Spec.NodeName)]++
				}
			}
			switch {
			case overZoneSkew(selector, c.MaxSkew, p, zone(hinted), counts):
				overSkew++
				if overSkew <= 15 {
					b.Logf("  %s (%s, selects %s) bound #%d at +%.1fs, hinted zone %s, went to %s; counts then %v",
						name, p.Labels["my-label"], selector, position[name], t.boundAt[name].Sub(t.boundAt[t.bindOrder[0]]).Seconds(),
						zone(hinted), zone(p.Spec.NodeName), counts)
				}
			default:
				// The kube-scheduler first tries the hinted Node with the pods nominated to it added, so the
				// selector's pods still waiting for that Node count in its zone too.
				for _, q := range t.bindOrder[position[name]+1:] {
					if q != name && t.boundWith[q] == hinted && byName[q] != nil && selector.Matches(labels.Set(byName[q].Labels)) {
						counts[zone(hinted)]++
					}
				}
				if overZoneSkew(selector, c.MaxSkew, p, zone(hinted), counts) {
					overWithNominated++
				}
			}
		}
		bound = append(bound, p)
	}
	b.Logf("zone-spread pods bound off their hint: %d, of which %d found their hinted zone over its skew from the pods bound before them, and %d more only counting the pods still nominated to the hinted Node; binding order against creation order: %d of %d pairs inverted",
		off, overSkew, overWithNominated, inversions, pairs)
}

// affinityFirsts logs, for each group of pods with zone self-affinity (workload.Diverse's "affinity" pods),
// the first pod the watch saw bound: the kube-scheduler places it in any zone, and the rest of its group then
// only in that one, so a first pod bound off its hinted zone sends the group's other hints astray.
func affinityFirsts(b *testing.B, pods []corev1.Pod, t *hintTracker) {
	ctx := context.Background()
	var nodes corev1.NodeList
	if err := s.kubeClient.List(ctx, &nodes); err != nil {
		b.Fatal(err)
	}
	zone := map[string]string{}
	for _, n := range nodes.Items {
		zone[n.Name] = n.Labels[corev1.LabelTopologyZone]
	}
	group := map[string]string{}
	ended := map[string]map[string]int{}
	for _, p := range pods {
		if podKind(&p) != "affinity" {
			continue
		}
		v := p.Labels["my-affininity"]
		group[p.Name] = v
		if ended[v] == nil {
			ended[v] = map[string]int{}
		}
		ended[v][zone[p.Spec.NodeName]]++
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := map[string]bool{}
	var lines []string
	for i, name := range t.bindOrder {
		v, ok := group[name]
		if !ok || seen[v] {
			continue
		}
		seen[v] = true
		first, with := t.first[name], t.boundWith[name]
		lines = append(lines, fmt.Sprintf("%s: %s bound #%d to zone %s, first hinted zone %s, hint at binding %q (zone %s); group ended %v",
			v, name, i, zone[t.bound[name]], zone[first], with, zone[with], ended[v]))
	}
	sort.Strings(lines)
	b.Logf("zone-affinity groups' first bindings: %s", strings.Join(lines, "; "))
}

// overSkewIfLast logs how many of the pods with a hard zone spread the plan puts in a zone that is over the
// spread's skew once every other planned pod is in place: the kube-scheduler, binding in an order of its
// own, fails such a pod's hint whenever it comes to it last, and no wait settles it.
func overSkewIfLast(b *testing.B, plan *solver.Plan, pods []*corev1.Pod) {
	zoneOf := map[string]string{}
	zones := map[string]bool{}
	for _, nc := range plan.NodeClaims {
		zones[nc.Zone] = true
		for _, p := range nc.Pods {
			zoneOf[p.Name] = nc.Zone
		}
	}
	over, spreads, _ := zoneSpreadsOverIfLast(b, pods, zoneOf, zoneOf, zones)
	b.Logf("plan: %d of %d hard zone spreads are over their skew if their pod is bound last", over, spreads)
}

// zoneSpreadsOverIfLast counts the hard zone spreads of pods with a zone in own (their planned or hinted
// zone) that are over their skew there when every other pod is in its zone in others, counted as the
// kube-scheduler does: the pods the selector matches, per zone, the pod itself excluded and then added. It
// returns how many are over, out of how many, and a few of them described.
func zoneSpreadsOverIfLast(b *testing.B, pods []*corev1.Pod, own, others map[string]string, zones map[string]bool) (int, int, []string) {
	spreads, over := 0, 0
	var shown []string
	for _, p := range pods {
		zone, planned := own[p.Name]
		if !planned {
			continue
		}
		for _, tsc := range p.Spec.TopologySpreadConstraints {
			if tsc.TopologyKey != corev1.LabelTopologyZone || tsc.WhenUnsatisfiable != corev1.DoNotSchedule || tsc.LabelSelector == nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector)
			if err != nil {
				b.Fatal(err)
			}
			spreads++
			count := map[string]int{}
			for z := range zones {
				count[z] = 0
			}
			for _, q := range pods {
				if q.Name != p.Name && sel.Matches(labels.Set(q.Labels)) && others[q.Name] != "" {
					count[others[q.Name]]++
				}
			}
			if overZoneSkew(sel, tsc.MaxSkew, p, zone, count) {
				over++
				if len(shown) < 5 {
					shown = append(shown, fmt.Sprintf("%s in %s selecting %s: %v", p.Name, zone, sel, count))
				}
			}
		}
	}
	return over, spreads, shown
}

// overZoneSkew reports whether a pod with a zone spread (selector, maxSkew) would be over the skew in zone,
// as the kube-scheduler checks it: counts holds the other pods the selector matches in every zone, and the
// pod itself is added if it matches.
func overZoneSkew(selector labels.Selector, maxSkew int32, pod *corev1.Pod, zone string, counts map[string]int) bool {
	least := -1
	for _, n := range counts {
		if least < 0 || n < least {
			least = n
		}
	}
	self := 0
	if selector.Matches(labels.Set(pod.Labels)) {
		self = 1
	}
	return counts[zone]+self-least > int(maxSkew)
}

// bindSpreadByNode logs how far apart in time the pods bound to their hinted Node were bound, Node by Node
// (median and 90th percentile of each Node's first-to-last), against the whole window of those bindings: a
// small spread per Node within a long window means the kube-scheduler binds Node by Node, in the order the
// Nodes open.
func bindSpreadByNode(b *testing.B, t *hintTracker) {
	t.mu.Lock()
	defer t.mu.Unlock()
	first, last := map[string]time.Time{}, map[string]time.Time{}
	var start, end time.Time
	for pod, node := range t.boundWith {
		if node == "" || t.bound[pod] != node {
			continue
		}
		at := t.boundAt[pod]
		if f, ok := first[node]; !ok || at.Before(f) {
			first[node] = at
		}
		if l, ok := last[node]; !ok || at.After(l) {
			last[node] = at
		}
		if start.IsZero() || at.Before(start) {
			start = at
		}
		if at.After(end) {
			end = at
		}
	}
	var spreads []float64
	for node, f := range first {
		spreads = append(spreads, last[node].Sub(f).Seconds())
	}
	if len(spreads) == 0 {
		return
	}
	sort.Float64s(spreads)
	b.Logf("bindings on their hinted Node: %d Nodes over %.1fs; per Node first to last: median %.2fs, p90 %.2fs, max %.2fs",
		len(spreads), end.Sub(start).Seconds(), spreads[len(spreads)/2], spreads[len(spreads)*9/10], spreads[len(spreads)-1])
}

// hintedOverSkewIfLast logs how many pods with a hard zone spread were hinted (their last hint, over every
// provisioning pass) to a zone that is over the spread's skew once every other pod is where it ended: on its
// Node if bound, else in the zone of its hint. Such a hint no binding order can follow.
func hintedOverSkewIfLast(b *testing.B, pods []corev1.Pod, t *hintTracker) {
	ctx := context.Background()
	t.mu.Lock()
	defer t.mu.Unlock()
	nodeZone := map[string]string{}
	zones := map[string]bool{}
	zoneOfNode := func(node string) string {
		z, ok := nodeZone[node]
		if !ok {
			n := &corev1.Node{}
			if s.kubeClient.Get(ctx, client.ObjectKey{Name: node}, n) == nil {
				z = n.Labels[corev1.LabelTopologyZone]
			}
			nodeZone[node] = z
			if z != "" {
				zones[z] = true
			}
		}
		return z
	}
	hinted, endedIn := map[string]string{}, map[string]string{}
	var all []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		all = append(all, p)
		if h := t.hint[p.Name]; h != "" {
			hinted[p.Name] = zoneOfNode(h)
			endedIn[p.Name] = hinted[p.Name]
		}
		if p.Spec.NodeName != "" {
			endedIn[p.Name] = zoneOfNode(p.Spec.NodeName)
		}
	}
	over, spreads, shown := zoneSpreadsOverIfLast(b, all, hinted, endedIn, zones)
	b.Logf("hints against where pods ended: %d of %d hard zone spreads are over their skew in their hinted zone if bound last; %s", over, spreads, strings.Join(shown, "; "))
}
