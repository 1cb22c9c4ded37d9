package provisioning_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// plannedRefs lists every pod a plan places, on existing capacity or new NodeClaims.
func plannedRefs(plan *solver.Plan) []string {
	out := plannedPods(plan)
	for _, p := range plan.Placements {
		out = append(out, p.Pod.String())
	}
	slices.Sort(out)
	return out
}

func nominationOf(t *testing.T, name string) state.Nomination {
	t.Helper()
	// A nomination to a NodeClaim just created is live once cluster state has seen the claim, which its
	// informer may do a moment after the provisioner's cache did.
	var n state.Nomination
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		var ok bool
		n, ok = cluster.NominationOf(types.NamespacedName{Namespace: "default", Name: name})
		return ok, nil
	})
	if err != nil {
		t.Fatalf("pod %s has no nomination", name)
	}
	return n
}

// A later pass keeps the pods nominated to NodeClaims in flight where they are and plans only what is new.
func TestProvisionKeepsNominatedPodsInPlace(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	h := newHarness()
	createPool(t, "default", nil)
	for i := range 3 {
		createPendingPod(t, fmt.Sprintf("first-%d", i), "1", nil)
	}
	provision(t, h.provisioner, 3)
	before := map[string]string{}
	for i := range 3 {
		name := fmt.Sprintf("first-%d", i)
		n := nominationOf(t, name)
		if n.Target.NodeClaim == "" {
			t.Fatalf("pod %s nominated to %+v, want a NodeClaim", name, n.Target)
		}
		before[name] = n.Target.NodeClaim
	}
	claims := len(listClaims(t))

	createPendingPod(t, "second-0", "1", nil)
	plan := provision(t, h.provisioner, 4)
	if got := plannedRefs(plan); !slices.Equal(got, []string{"default/second-0"}) {
		t.Errorf("second pass planned %v, want only the new pod", got)
	}
	for name, claim := range before {
		if got := nominationOf(t, name).Target.NodeClaim; got != claim {
			t.Errorf("pod %s moved from %s to %s", name, claim, got)
		}
	}
	if got := nominationOf(t, "second-0"); got.Target.NodeClaim == "" && got.Target.Node == "" {
		t.Errorf("new pod not nominated")
	}
	if again := len(listClaims(t)); again < claims {
		t.Errorf("claims went from %d to %d", claims, again)
	}
}

// A pod whose NodeClaim is gone is planned again.
func TestProvisionPlansAgainWhenTheClaimIsGone(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	h := newHarness()
	createPool(t, "default", nil)
	createPendingPod(t, "web", "1", nil)
	provision(t, h.provisioner, 1)
	first := nominationOf(t, "web").Target.NodeClaim
	gone := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: first}}
	if err := env.Client.Delete(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(gone), gone); err != nil {
		t.Fatal(err)
	}
	releaseClaim(t, gone)
	awaitState(t, func(s *state.Snapshot) bool {
		return !slices.ContainsFunc(s.InFlight, func(c *state.InFlightNodeClaim) bool { return c.NodeClaim.Name == first })
	})
	plan := provision(t, h.provisioner, 1)
	if got := plannedRefs(plan); !slices.Equal(got, []string{"default/web"}) {
		t.Fatalf("planned %v after the claim went, want the pod again", got)
	}
	if again := nominationOf(t, "web").Target.NodeClaim; again == first || again == "" {
		t.Errorf("pod nominated to %q, want a new claim", again)
	}
}

// A node's room promised to a nominated pod is not given to another pod.
func TestProvisionDoesNotDoubleBookANominatedNode(t *testing.T) {
	t.Cleanup(func() { cleanup(t); cleanupNodes(t) })
	h := newHarness()
	createPool(t, "default", nil)
	node := createUntaintedNode(t, "roomy", "2")
	first := createPendingPod(t, "first", "1500m", nil)
	plan := provision(t, h.provisioner, 1)
	if len(plan.Placements) != 1 || plan.Placements[0].Target != node.Name {
		t.Fatalf("first pass placed %+v, want the pod on the node", plan.Placements)
	}
	if got := nominationOf(t, first.Name).Target.Node; got != node.Name {
		t.Fatalf("pod nominated to %q, want %s", got, node.Name)
	}
	createPendingPod(t, "second", "1500m", nil)
	plan = provision(t, h.provisioner, 2)
	if len(plan.Placements) != 0 || !slices.Equal(plannedPods(plan), []string{"default/second"}) {
		t.Errorf("second pass placed %+v and launched for %v; want the second pod on a new claim", plan.Placements, plannedPods(plan))
	}
}

// antiAffine labels the pod app=anti and keeps it off any host with another app=anti pod.
func antiAffine(pod *corev1.Pod) {
	pod.Labels = map[string]string{"app": "anti"}
	pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anti"}},
	}}}}
}

// When pods that each need a host of their own arrive after the claims in flight were sized for earlier
// pods, the pass plans the earlier pods afresh with them: pods of the first pass make room on their claim
// and move to the new claims, so the second pass opens fewer, cheaper claims than keeping them would.
func TestProvisionRegroupsPodsOfClaimsInFlightWhenThatCostsLess(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	h := onDemandEC2Harness(t)
	for i := range 8 {
		createPendingPod(t, fmt.Sprintf("first-%d", i), "450m", nil)
	}
	first := provision(t, h.provisioner, 8)
	for i := range 4 {
		createPendingPod(t, fmt.Sprintf("anti-%d", i), "450m", antiAffine)
	}
	inFlight := nominationOf(t, "first-0").Target.NodeClaim
	h.recorder.Reset()
	second := provision(t, h.provisioner, 12)
	// Kept in place, the first pods fill their claim and each anti-affine pod opens one of its own (four
	// c6g.medium, $0.136/h); regrouped, one of them joins the claim in flight and a first pod makes room.
	if len(second.NodeClaims) != 3 || second.PricePerHour >= first.PricePerHour {
		t.Errorf("second pass opens %d claims at $%.4f/h, want 3 for less than the $%.4f/h of one claim per anti-affine pod",
			len(second.NodeClaims), second.PricePerHour, first.PricePerHour)
	}
	moved := 0
	for i := range 8 {
		if nominationOf(t, fmt.Sprintf("first-%d", i)).Target.NodeClaim != inFlight {
			moved++
		}
	}
	onInFlight := 0
	for i := range 4 {
		if nominationOf(t, fmt.Sprintf("anti-%d", i)).Target.NodeClaim == inFlight {
			onInFlight++
		}
	}
	if moved != 1 || onInFlight != 1 {
		t.Errorf("%d first pods moved off the claim in flight and %d anti-affine pods joined it, want 1 and 1", moved, onInFlight)
	}
	// Nominated events only for the pods whose place changed: the four new ones and the one that moved.
	if got := len(h.recorder.WithReason("Nominated")); got != 5 {
		t.Errorf("second pass published %d Nominated events, want 5", got)
	}
}

// The same holds for pods nominated to a Node and still waiting for the kube-scheduler: a pod of the first
// pass makes room on the Node for one that needs a host of its own, and moves to a new claim.
func TestProvisionRegroupsPodsWaitingOnANode(t *testing.T) {
	t.Cleanup(func() { cleanup(t); cleanupNodes(t) })
	h := onDemandEC2Harness(t)
	node := createUntaintedNode(t, "waiting-room", "2")
	for i := range 4 {
		createPendingPod(t, fmt.Sprintf("first-%d", i), "450m", nil)
	}
	if first := provision(t, h.provisioner, 4); len(first.NodeClaims) != 0 || len(first.Placements) != 4 {
		t.Fatalf("first pass opened %d claims and placed %d pods on the Node, want 0 and 4", len(first.NodeClaims), len(first.Placements))
	}
	for i := range 4 {
		createPendingPod(t, fmt.Sprintf("anti-%d", i), "450m", antiAffine)
	}
	second := provision(t, h.provisioner, 8)
	// Kept on the Node, the first pods leave no room for an anti-affine pod, and each of the four opens a
	// claim of its own; regrouped, one of them takes the place of a first pod, which joins a new claim.
	if len(second.NodeClaims) != 3 {
		t.Errorf("second pass opens %d claims at $%.4f/h, want 3", len(second.NodeClaims), second.PricePerHour)
	}
	moved, onNode := 0, 0
	for i := range 4 {
		if nominationOf(t, fmt.Sprintf("first-%d", i)).Target.Node != node.Name {
			moved++
		}
		if nominationOf(t, fmt.Sprintf("anti-%d", i)).Target.Node == node.Name {
			onNode++
		}
	}
	if moved != 1 || onNode != 1 {
		t.Errorf("%d first pods moved off the Node and %d anti-affine pods were planned onto it, want 1 and 1", moved, onNode)
	}
}

// TestProvisionRegroupingMovesOnlyDisplacedPods: when regrouping puts anti-affine pods on Nodes where pods
// wait, only the pods they displace move. Eight 450m pods wait on two 2-cpu Nodes, four on each; four
// anti-affine 450m pods arrive. Two of them take a place on the Nodes and two open claims, where the two
// displaced pods go. Packed afresh the first fit moves three waiting pods (the first Node's fourth pod
// would take the second Node's first place, and so on).
func TestProvisionRegroupingMovesOnlyDisplacedPods(t *testing.T) {
	t.Cleanup(func() { cleanup(t); cleanupNodes(t) })
	h := onDemandEC2Harness(t)
	nodes := map[string]bool{}
	for _, name := range []string{"room-a", "room-b"} {
		nodes[createUntaintedNode(t, name, "2").Name] = true
	}
	for i := range 8 {
		createPendingPod(t, fmt.Sprintf("first-%d", i), "450m", nil)
	}
	if first := provision(t, h.provisioner, 8); len(first.NodeClaims) != 0 || len(first.Placements) != 8 {
		t.Fatalf("first pass opened %d claims and placed %d pods on Nodes, want 0 and 8", len(first.NodeClaims), len(first.Placements))
	}
	was := map[string]string{}
	for i := range 8 {
		name := fmt.Sprintf("first-%d", i)
		was[name] = nominationOf(t, name).Target.Node
	}
	for i := range 4 {
		createPendingPod(t, fmt.Sprintf("anti-%d", i), "450m", antiAffine)
	}
	second := provision(t, h.provisioner, 12)
	if len(second.NodeClaims) != 2 {
		t.Errorf("second pass opens %d claims at $%.4f/h, want 2", len(second.NodeClaims), second.PricePerHour)
	}
	moved, onNodes := 0, 0
	for name, node := range was {
		if nominationOf(t, name).Target.Node != node {
			moved++
		}
	}
	for i := range 4 {
		if nodes[nominationOf(t, fmt.Sprintf("anti-%d", i)).Target.Node] {
			onNodes++
		}
	}
	if moved != 2 || onNodes != 2 {
		t.Errorf("%d waiting pods moved and %d anti-affine pods were planned onto the Nodes, want 2 and 2", moved, onNodes)
	}
}

// onDemandEC2Harness returns a harness whose cloud offers EC2's c, m and r families, with a default pool
// that launches them on demand.
func onDemandEC2Harness(t *testing.T) *harness {
	t.Helper()
	h := newHarness()
	its, err := catalog.EC2(catalog.EC2Options{Categories: []string{"c", "m", "r"}})
	if err != nil {
		t.Fatal(err)
	}
	h.cloud.InstanceTypes = its
	createPool(t, "default", func(pool *v1.NodePool) {
		pool.Spec.Template.Spec.Requirements = append(pool.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}})
	})
	return h
}

// createUntaintedNode creates a ready Node (createNode) without the not-ready taint the API server puts on a
// new Node, as a kubelet would report it, and waits until the cluster state has it so.
func createUntaintedNode(t *testing.T, name, cpu string) *corev1.Node {
	t.Helper()
	node := createNode(t, name, cpu, nil)
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	node.Spec.Taints = nil
	if err := env.Client.Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	awaitState(t, func(s *state.Snapshot) bool {
		n := snapshotNode(s, name)
		return n != nil && !n.Allocatable.Cpu().IsZero() && len(n.Taints) == 0
	})
	return node
}
