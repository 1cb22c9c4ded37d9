package provisioning_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
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
	node := createNode(t, "roomy", "2", nil)
	// The API server taints a new Node not-ready; a kubelet would report it ready.
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	node.Spec.Taints = nil
	if err := env.Client.Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	awaitState(t, func(s *state.Snapshot) bool {
		n := snapshotNode(s, "roomy")
		return n != nil && !n.Allocatable.Cpu().IsZero() && len(n.Taints) == 0
	})
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
