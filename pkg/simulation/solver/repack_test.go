package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// On the small catalog (0.05 per cpu, 100m overhead per node, 110 pods per node) a 250m pod costs least on
// c-16: 63 pods for 0.80. Placing pods one at a time always finds the smallest type the cheapest next
// step; the plan must still end up on the types that cost least per pod.
func TestAlikePodsPackOntoTheCheapestTypesPerPod(t *testing.T) {
	plan := solveChecked(t, input(pods(1000, "web", "250m", "64Mi"), nodePool("default")), solver.Options{})
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %v", reasonsOf(plan))
	}
	const cheapest = 16 * 0.80 // ceil(1000/63) nodes of c-16
	if plan.PricePerHour > cheapest+1e-9 {
		t.Errorf("plan costs %.4f/h on %d nodes, want at most %.4f/h", plan.PricePerHour, len(plan.NodeClaims), cheapest)
	}
	if len(plan.NodeClaims) > 16 {
		t.Errorf("plan has %d nodes, want at most 16", len(plan.NodeClaims))
	}
}

// A few pods gain nothing from larger types: the greedy plan is kept.
func TestRepackingKeepsACheaperGreedyPlan(t *testing.T) {
	plan := solveChecked(t, input(pods(3, "web", "250m", "64Mi"), nodePool("default")), solver.Options{})
	if len(plan.NodeClaims) != 1 || plan.NodeClaims[0].InstanceTypeNames[0] != "c-2" {
		t.Errorf("want one c-2, got %+v", plan.NodeClaims)
	}
}

// Pods another pod's spread counts keep the places the spread gave them.
func TestRepackingLeavesCountedPodsAlone(t *testing.T) {
	ps := pods(200, "web", "250m", "64Mi", withLabels(map[string]string{"app": "web"}))
	ps = append(ps, pod("spreader", "250m", "64Mi", withSpreadOf(v1.LabelHostname, "web")))
	plan := solveChecked(t, input(ps, nodePool("default")), solver.Options{})
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %v", reasonsOf(plan))
	}
}

// Pods a zone spread counts keep the places the spread gave them.
func TestRepackingLeavesZoneCountedPodsAlone(t *testing.T) {
	web := map[string]string{"app": "web"}
	ps := pods(300, "plain", "250m", "64Mi", withLabels(web))
	ps = append(ps, pods(30, "spread", "250m", "64Mi", withLabels(web), withSpreadOf(v1.LabelTopologyZone, "web"))...)
	ps = append(ps, pods(300, "late", "250m", "64Mi", withLabels(web))...)
	plan := solveChecked(t, input(ps, nodePool("default")), solver.Options{})
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %v", reasonsOf(plan))
	}
}

// withSpreadOf gives the pod a topology spread over key (maxSkew 1) of the pods labelled app=app.
func withSpreadOf(key, app string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: key,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
	}
}

// Five 1-cpu pods cost the same on two c-4 as on one c-8: the plan takes the single node, as Karpenter's
// getting-started walkthrough shows for inflate.
func TestRepackingPrefersFewerNodesAtTheSamePrice(t *testing.T) {
	plan := solveChecked(t, input(pods(5, "inflate", "1", "64Mi"), nodePool("default")), solver.Options{})
	if len(plan.NodeClaims) != 1 || plan.NodeClaims[0].InstanceTypeNames[0] != "c-8" {
		t.Errorf("want one c-8, got %d nodes at %.4f/h", len(plan.NodeClaims), plan.PricePerHour)
	}
}

// A repacking that would be cheaper but break the pool's limits is not taken: "big" holds the four pods for
// less than four "small" nodes, but its 16 cpu exceed the pool's limit of 10.
func TestRepackingStaysWithinLimits(t *testing.T) {
	pool := nodePool("default", func(np *v1.NodePool) {
		np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("10")}
	})
	in := input(pods(4, "web", "1", "64Mi"), pool)
	in.InstanceTypes["default"] = cloudprovider.InstanceTypes{instanceType("small", "amd64", 2, 0.2), instanceType("big", "amd64", 16, 0.7)}
	plan := solveChecked(t, in, solver.Options{})
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %v", reasonsOf(plan))
	}
	for _, nc := range plan.NodeClaims {
		if nc.InstanceTypeNames[0] == "big" {
			t.Errorf("nodeclaim %s launches big (16 cpu) past the pool's 10-cpu limit", nc.Name)
		}
	}
}
