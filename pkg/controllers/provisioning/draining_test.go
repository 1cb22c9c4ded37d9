package provisioning_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// holdFinalizer keeps a deleted test Node around, as Lathe's termination finalizer would while it drains.
const holdFinalizer = "test.lathe.dev/hold"

// drainings are the three ways a node is known to be going away.
var drainings = []struct {
	name  string
	start func(t *testing.T, node *corev1.Node)
}{
	{"disrupted taint", func(t *testing.T, node *corev1.Node) {
		node.Spec.Taints = append(node.Spec.Taints, v1.DisruptedNoScheduleTaint)
		if err := env.Client.Update(context.Background(), node); err != nil {
			t.Fatal(err)
		}
	}},
	{"deletion mark", func(t *testing.T, node *corev1.Node) {
		cluster.Deletions.Mark(node.Spec.ProviderID)
		t.Cleanup(func() { cluster.Deletions.Unmark(node.Spec.ProviderID) })
	}},
	{"deletion timestamp", func(t *testing.T, node *corev1.Node) {
		if err := env.Client.Delete(context.Background(), node); err != nil {
			t.Fatal(err)
		}
	}},
}

func TestProvisionPlacesPodsOfDrainingNodesAhead(t *testing.T) {
	for _, d := range drainings {
		t.Run(d.name, func(t *testing.T) {
			t.Cleanup(func() { cleanup(t); cleanupNodes(t) })
			h := newHarness()
			createPool(t, "default", nil)
			// Plenty of room: were the node still a target, the pods would stay on it.
			old := createNode(t, "old", "16", nil)
			createBoundPod(t, "app", old, "1", nil)
			createBoundPod(t, "agent", old, "100m", ownedBy("apps/v1", "DaemonSet"))
			createBoundPod(t, "static", old, "100m", ownedBy("v1", "Node"))
			createBoundPod(t, "tolerant", old, "100m", func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: v1.DisruptedNoScheduleTaint.Key, Operator: corev1.TolerationOpExists}}
			})
			d.start(t, old)
			awaitState(t, func(s *state.Snapshot) bool {
				n := snapshotNode(s, "old")
				return n != nil && n.MarkedForDeletion && len(n.Pods) == 4
			})

			plan := provision(t, h.provisioner, 0)
			if got := plannedPods(plan); !slices.Equal(got, []string{"default/app"}) {
				t.Fatalf("new nodeclaims planned for pods %v, want only default/app", got)
			}
			for _, p := range plan.Placements {
				if p.Target == "old" {
					t.Errorf("pod %s placed on the draining node", p.Pod)
				}
			}
			claims := listClaims(t)
			if len(claims) != len(plan.NodeClaims) {
				t.Fatalf("created %d nodeclaims, plan has %d", len(claims), len(plan.NodeClaims))
			}
			if n := len(h.recorder.WithReason("FailedScheduling")); n != 0 {
				t.Errorf("%d FailedScheduling events on pods of the draining node", n)
			}

			// The drain has not evicted the pod yet: the next pass finds it room on the claim in flight.
			again := provision(t, h.provisioner, 0)
			if len(again.NodeClaims) != 0 || len(listClaims(t)) != len(claims) {
				t.Fatalf("second pass planned %d more nodeclaims for the same pod", len(again.NodeClaims))
			}
			// Evicted, the pod is replaced by a pending one, which the claim in flight holds as well.
			deletePod(t, "app")
			awaitState(t, func(s *state.Snapshot) bool { return len(snapshotNode(s, "old").Pods) == 3 })
			createPendingPod(t, "app-replacement", "1", nil)
			provision(t, h.provisioner, 1)
			if n := len(listClaims(t)); n != len(claims) {
				t.Fatalf("the evicted pod's replacement launched more capacity: %d nodeclaims, want %d", n, len(claims))
			}
		})
	}
}

func TestProvisionCountsDrainingNodesAgainstLimits(t *testing.T) {
	for _, d := range drainings {
		t.Run(d.name, func(t *testing.T) {
			t.Cleanup(func() { cleanup(t); cleanupNodes(t) })
			h := newHarness()
			// A 1-cpu pod needs a 2-cpu instance; with the draining node's 3 cpu that is over the limit of 4.
			createPool(t, "default", func(p *v1.NodePool) {
				p.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("4")}
			})
			old := createNode(t, "old", "3", nil)
			d.start(t, old)
			awaitState(t, func(s *state.Snapshot) bool {
				n := snapshotNode(s, "old")
				return n != nil && n.MarkedForDeletion
			})
			createPendingPod(t, "web", "1", nil)
			provision(t, h.provisioner, 1)
			if claims := listClaims(t); len(claims) != 0 {
				t.Fatalf("launched %d nodeclaims past the pool's limit while its draining node still runs", len(claims))
			}
			if len(h.recorder.WithReason("FailedScheduling")) == 0 {
				t.Error("the pod over the limit was not reported unschedulable")
			}
		})
	}
}

// plannedPods lists, sorted, the pods the plan launches new NodeClaims for.
func plannedPods(plan *solver.Plan) []string {
	var out []string
	for _, c := range plan.NodeClaims {
		for _, p := range c.Pods {
			out = append(out, p.String())
		}
	}
	slices.Sort(out)
	return out
}

// createNode creates a ready Node of the default pool with the cpu capacity.
func createNode(t *testing.T, name, cpu string, mutate func(*corev1.Node)) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{holdFinalizer}, Labels: map[string]string{
			v1.NodePoolLabelKey: "default", v1.LabelHostname: name, v1.LabelOS: "linux", v1.LabelArch: "amd64",
			v1.LabelTopologyZone: "test-zone-1", v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand,
		}},
		Spec: corev1.NodeSpec{ProviderID: "fake:///test-zone-1/" + name},
	}
	if mutate != nil {
		mutate(node)
	}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	resources := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	node.Status.Capacity, node.Status.Allocatable = resources, resources
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	return node
}

// createBoundPod creates a running pod bound to the node.
func createBoundPod(t *testing.T, name string, node *corev1.Node, cpu string, mutate func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "pause",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
	if mutate != nil {
		mutate(pod)
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// ownedBy makes the pod controlled by an object of the kind.
func ownedBy(apiVersion, kind string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "owner",
			UID: "6f1f3a52-0000-4000-8000-000000000001", Controller: ptrTo(true)}}
	}
}

func ptrTo[T any](v T) *T { return &v }

func deletePod(t *testing.T, name string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	if err := env.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
}

// awaitState waits until the cluster state satisfies ok.
func awaitState(t *testing.T, ok func(*state.Snapshot) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return ok(cluster.Snapshot()), nil
	})
	if err != nil {
		t.Fatalf("waiting for the cluster state: %v", err)
	}
}

func snapshotNode(s *state.Snapshot, name string) *state.StateNode {
	for _, n := range s.Nodes {
		if n.Node.Name == name {
			return n
		}
	}
	return nil
}

// cleanupNodes releases and deletes every Node, and waits until the cluster state has none.
func cleanupNodes(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var nodes corev1.NodeList
	if err := env.Client.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if controllerutil.RemoveFinalizer(node, holdFinalizer) {
			if err := env.Client.Update(ctx, node); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
		if err := env.Client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	awaitState(t, func(s *state.Snapshot) bool { return len(s.Nodes) == 0 && len(s.InFlight) == 0 })
}
