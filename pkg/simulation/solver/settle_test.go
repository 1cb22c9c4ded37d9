package solver_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// overSkewAtTheEnd lists the pods whose hard zone spread the plan leaves over its skew once every planned
// pod is in place, counted as the kube-scheduler counts when it binds the pod last: the pods the selector
// matches per zone (zones of the test catalog), the pod itself left out and then added if it matches.
func overSkewAtTheEnd(t *testing.T, plan *solver.Plan, ps []*corev1.Pod) []string {
	t.Helper()
	return overSkewAtTheEndIn(t, plan, ps, testZones())
}

// overSkewAtTheEndIn is overSkewAtTheEnd over the given zones.
func overSkewAtTheEndIn(t *testing.T, plan *solver.Plan, ps []*corev1.Pod, zones []string) []string {
	t.Helper()
	return overZoneSpreads(t, plan, ps, func(p *corev1.Pod, maxSkew int, matches func(*corev1.Pod) bool, zoneOf map[string]string) bool {
		count := map[string]int{}
		for _, z := range zones {
			count[z] = 0
		}
		for _, q := range ps {
			if q.Name != p.Name && matches(q) {
				count[zoneOf[q.Name]]++
			}
		}
		least := len(ps)
		for _, z := range zones {
			least = min(least, count[z])
		}
		self := 0
		if matches(p) {
			self = 1
		}
		return count[zoneOf[p.Name]]+self-least > maxSkew
	})
}

// overZoneSpreads lists the pods with a hard zone spread that over reports as over its skew, given the
// spread's maxSkew, whether its selector matches a pod, and the planned zone of every pod.
func overZoneSpreads(t *testing.T, plan *solver.Plan, ps []*corev1.Pod,
	over func(p *corev1.Pod, maxSkew int, matches func(*corev1.Pod) bool, zoneOf map[string]string) bool) []string {
	t.Helper()
	zoneOf := map[string]string{}
	for _, nc := range plan.NodeClaims {
		for _, p := range nc.Pods {
			zoneOf[p.Name] = nc.Zone
		}
	}
	var names []string
	for _, p := range ps {
		for _, tsc := range p.Spec.TopologySpreadConstraints {
			if tsc.TopologyKey != v1.LabelTopologyZone || tsc.WhenUnsatisfiable != corev1.DoNotSchedule {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector)
			if err != nil {
				t.Fatal(err)
			}
			matches := func(q *corev1.Pod) bool { return sel.Matches(labels.Set(q.Labels)) }
			if over(p, int(tsc.MaxSkew), matches, zoneOf) {
				names = append(names, p.Name)
			}
		}
	}
	return names
}

// One pod spreads over zones the pods labelled app=web, itself among them, and four more such pods have no
// constraint. Packed onto the spread pod's node, they would leave its zone four ahead of the others: bound
// after them, the kube-scheduler refuses the spread pod there. The plan keeps the zone within the skew.
func TestPlanKeepsPlacedSpreadsWithinTheirSkew(t *testing.T) {
	web := map[string]string{"app": "web"}
	ps := []*corev1.Pod{pod("spread", "1", "64Mi", withLabels(web), withSpreadOf(v1.LabelTopologyZone, "web"))}
	ps = append(ps, pods(4, "web", "250m", "64Mi", withLabels(web))...)
	plan := planEvery(t, ps)
	if over := overSkewAtTheEnd(t, plan, ps); len(over) > 0 {
		t.Errorf("over their skew once every pod is placed: %v", over)
	}
}

// Keeping the spreads settled is a preference: pods that can only go to the spread pod's zone still go
// there, as the kube-scheduler places them (the spread pod, placed first, opens a claim in zone-a: the zone
// with the fewest matching pods, then by name).
func TestSettlingSpreadsIsAPreference(t *testing.T) {
	web := map[string]string{"app": "web"}
	inZoneA := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{v1.LabelTopologyZone: "zone-a"} }
	ps := []*corev1.Pod{pod("spread", "1", "64Mi", withLabels(web), withSpreadOf(v1.LabelTopologyZone, "web"))}
	ps = append(ps, pods(4, "web", "250m", "64Mi", withLabels(web), inZoneA)...)
	plan := planEvery(t, ps)
	if over := overSkewAtTheEnd(t, plan, ps); len(over) != 1 {
		t.Errorf("want the spread pod's zone ahead (it can be bound first only), got %v over", over)
	}
}

// overSkewInSomeOrder lists the pods whose hard zone spread some binding order breaks: the one that binds,
// before the pod, every pod the selector matches in the pod's zone and none elsewhere. No bound pods exist
// in these tests, so that zone then counts all of its planned matching pods against a least count of zero.
func overSkewInSomeOrder(t *testing.T, plan *solver.Plan, ps []*corev1.Pod) []string {
	t.Helper()
	return overZoneSpreads(t, plan, ps, func(p *corev1.Pod, maxSkew int, matches func(*corev1.Pod) bool, zoneOf map[string]string) bool {
		ahead := 0
		for _, q := range ps {
			if q.Name != p.Name && matches(q) && zoneOf[q.Name] == zoneOf[p.Name] {
				ahead++
			}
		}
		if matches(p) {
			ahead++
		}
		return ahead > maxSkew
	})
}

// A pod spreads over zones the pods labelled app=web without being one of them. Two web pods must go to
// zone-b and two to zone-c; three more have no constraint and would fit in the free room of the spread
// pod's node in zone-a, where the counts allow three (3 against 2 and 2 at the end). But the kube-scheduler
// may bind those three first, and then refuses the spread pod in zone-a (3 against 0). The plan keeps them
// out of the spread pod's zone, on the room the other zones' nodes have, so no binding order breaks it.
func TestPlanKeepsSpreadsWithinTheirSkewInAnyBindingOrder(t *testing.T) {
	web := map[string]string{"app": "web"}
	inZone := func(z string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{v1.LabelTopologyZone: z} }
	}
	ps := []*corev1.Pod{pod("spread", "1", "64Mi", withSpreadOf(v1.LabelTopologyZone, "web"))}
	ps = append(ps, pods(2, "web-b", "250m", "64Mi", withLabels(web), inZone("zone-b"))...)
	ps = append(ps, pods(2, "web-c", "250m", "64Mi", withLabels(web), inZone("zone-c"))...)
	ps = append(ps, pods(3, "web", "250m", "64Mi", withLabels(web))...)
	plan := planEvery(t, ps)
	if over := overSkewInSomeOrder(t, plan, ps); len(over) > 0 {
		t.Errorf("over their skew in some binding order: %v", over)
	}
	if over := overSkewAtTheEnd(t, plan, ps); len(over) > 0 {
		t.Errorf("over their skew once every pod is placed: %v", over)
	}
}

// planEvery solves ps on the default pool, checked, and fails the test unless every pod is placed.
func planEvery(t *testing.T, ps []*corev1.Pod) *solver.Plan {
	t.Helper()
	plan := solveChecked(t, input(ps, nodePool("default")), solver.Options{})
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %v", reasonsOf(plan))
	}
	return plan
}

// A pod an earlier pass planned onto an existing node waits there for the kube-scheduler (nominated, not
// bound) with a hard spread over zones of the web pods, without being one of them. Three web pods come in a
// later pass and fit the free room of that node, the tightest fit. Placed there, they put its zone three
// ahead of the others, and the kube-scheduler, binding them first, then refuses the waiting pod. The plan
// keeps them out of the waiting pod's zone, as it does for a spread pod it places itself.
func TestPlanKeepsWaitingSpreadsWithinTheirSkew(t *testing.T) {
	web := map[string]string{"app": "web"}
	waiting := pod("spread", "1", "64Mi", withSpreadOf(v1.LabelTopologyZone, "web"))
	pool := map[string]string{v1.NodePoolLabelKey: "default"}
	in := input(pods(3, "web", "250m", "64Mi", withLabels(web)), nodePool("default"))
	for _, z := range testZones() {
		labels := map[string]string{v1.LabelTopologyZone: z}
		for k, v := range pool {
			labels[k] = v
		}
		cpu := "8"
		var held []*corev1.Pod
		if z == "zone-a" {
			cpu, held = "2", []*corev1.Pod{waiting}
		}
		in.Nodes = append(in.Nodes, existingNode("node-"+z, labels, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi")}, held...))
	}
	plan := solveChecked(t, in, solver.Options{})
	if len(plan.Unschedulable) > 0 || len(plan.NodeClaims) > 0 {
		t.Fatalf("want every web pod on the existing nodes, got %d claims, unschedulable %v", len(plan.NodeClaims), reasonsOf(plan))
	}
	for _, p := range plan.Placements {
		if p.Target == "node-zone-a" {
			t.Errorf("%s placed in the waiting spread pod's zone", p.Pod.Name)
		}
	}
}

// A pod spreads over hostnames the web pods without being one of them, and three web pods fit the room its
// node has left. The kube-scheduler counts the web pods on the node (and, first, those nominated to it)
// against a least count of zero, the count of any node without one: with two or more there, the spread pod
// is refused its node in every binding order. The plan leaves at most one web pod beside it.
func TestPlanKeepsHostnameSpreadsWithinTheirSkew(t *testing.T) {
	web := map[string]string{"app": "web"}
	ps := []*corev1.Pod{pod("spread", "1", "64Mi", withSpreadOf(v1.LabelHostname, "web"))}
	ps = append(ps, pods(3, "web", "250m", "64Mi", withLabels(web))...)
	plan := planEvery(t, ps)
	for _, nc := range plan.NodeClaims {
		spread, webs := false, 0
		for _, p := range nc.Pods {
			spread = spread || p.Name == "spread"
			if strings.HasPrefix(p.Name, "web") {
				webs++
			}
		}
		if spread && webs > 1 {
			t.Errorf("%d web pods beside the spread pod on %s", webs, nc.Name)
		}
	}
}
