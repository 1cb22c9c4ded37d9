package solver_test

import (
	"testing"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// A small pod spreads over zones the pods labelled app=web without being one of them, and six larger web
// pods, one to a node, have no constraint. Packed largest first, the web pods come first and their claims
// take the zone with the fewest web pods each, two to a zone, so the spread pod finds two of them wherever
// it goes: the kube-scheduler refuses it whenever it comes to it after those two and before the others'. The
// spread's group gets a host zone before packing: the web pods keep out of it, and the spread pod goes there.
func TestSpreadPodsGoWhereTheirSelectedPodsAreNot(t *testing.T) {
	web := map[string]string{"app": "web"}
	ps := pods(6, "web", "3", "64Mi", withLabels(web))
	ps = append(ps, pod("spread", "100m", "64Mi", withSpreadOf(v1.LabelTopologyZone, "web")))
	plan := planEvery(t, ps)
	if over := overSkewInSomeOrder(t, plan, ps); len(over) > 0 {
		t.Errorf("over their skew in some binding order: %v", over)
	}
}

// Replicas that spread over zones by their own labels are the members of their spread's group, which another
// pod's spread counts too: host zones must not gather them, they are spread over every zone as the
// kube-scheduler requires. (The group gets no host zone at all; a host would only be tried and given up.)
func TestSelfSpreadingReplicasStillSpreadOverEveryZone(t *testing.T) {
	web := map[string]string{"app": "web"}
	ps := pods(6, "web", "3", "64Mi", withLabels(web), withSpreadOf(v1.LabelTopologyZone, "web"))
	ps = append(ps, pod("watch", "100m", "64Mi", withSpreadOf(v1.LabelTopologyZone, "web")))
	plan := planEvery(t, ps)
	zones := map[string]int{}
	for _, nc := range plan.NodeClaims {
		for _, p := range nc.Pods {
			if p.Name != "watch" {
				zones[nc.Zone]++
			}
		}
	}
	for _, z := range testZones() {
		if zones[z] != 2 {
			t.Errorf("want two replicas in each zone, got %v", zones)
			break
		}
	}
	if over := overSkewAtTheEnd(t, plan, ps); len(over) > 0 {
		t.Errorf("over their skew once every pod is placed: %v", over)
	}
}
