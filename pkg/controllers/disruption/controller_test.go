package disruption_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
	eventsfake "github.com/lathe-autoscaler/lathe/pkg/events/fake"
	"github.com/lathe-autoscaler/lathe/pkg/state"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/informed"
)

var (
	env          *environment.Environment
	cachedClient client.Client
	cluster      *state.Cluster
)

func TestMain(m *testing.M) {
	code := m.Run()
	if stopEnv != nil {
		stopEnv()
	}
	os.Exit(code)
}

var (
	envOnce sync.Once
	stopEnv func()
)

// startEnv starts the API server and the cluster-state manager the first time an integration test needs
// them (the pure decision tests and the benchmark don't).
func startEnv(t *testing.T) {
	envOnce.Do(func() {
		var err error
		if env, err = environment.Start(); err != nil {
			t.Fatal(err)
		}
		view, err := informed.Start(env.Config, env.Scheme)
		if err != nil {
			_ = env.Stop()
			t.Fatal(err)
		}
		cachedClient, cluster = view.Client, view.State
		stopEnv = func() {
			view.Stop()
			if err := env.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}
	})
	if cachedClient == nil {
		t.Fatal("the test API server did not start")
	}
}

type harness struct {
	t          *testing.T
	clock      *clocktesting.FakeClock
	recorder   *eventsfake.Recorder
	registry   *prometheus.Registry
	controller *disruption.Controller
}

func newHarness(t *testing.T) *harness {
	startEnv(t)
	t.Cleanup(func() { cleanup(t) })
	h := &harness{t: t, clock: clocktesting.NewFakeClock(time.Now()), recorder: &eventsfake.Recorder{}, registry: prometheus.NewRegistry()}
	h.controller = disruption.NewController(disruption.Deps{
		Client: cachedClient, Cluster: cluster, Marker: cluster.Deletions, CloudProvider: fake.New(catalog()...),
		Clock: h.clock, Recorder: h.recorder, Registerer: h.registry,
	})
	return h
}

// reconcileUntil steps the loop (and the clock, by a second per turn) until cond holds.
func (h *harness) reconcileUntil(what string, cond func(ctx context.Context) (bool, error)) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := h.controller.Reconcile(ctx); err != nil {
			return false, err
		}
		h.clock.Step(time.Second)
		return cond(ctx)
	})
	if err != nil {
		h.t.Fatalf("waiting for %s: %v", what, err)
	}
}

func cleanup(t *testing.T) {
	ctx := context.Background()
	var claims v1.NodeClaimList
	_ = env.Client.List(ctx, &claims)
	for i := range claims.Items {
		c := &claims.Items[i]
		c.Finalizers = nil
		_ = env.Client.Update(ctx, c)
	}
	for _, obj := range []client.Object{&v1.NodeClaim{}, &v1.NodePool{}, &corev1.Node{}} {
		if err := env.Client.DeleteAllOf(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var nodes corev1.NodeList
		err := cachedClient.List(ctx, &nodes)
		return err == nil && len(nodes.Items) == 0, nil
	})
}

func createPool(t *testing.T, mutate ...func(*v1.NodePool)) {
	p := pool(mutate...)
	if err := env.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// createNode creates a managed node of the default pool (Node, NodeClaim with its status) with a pod.
func createNode(t *testing.T, name string, cpu int64, podCPU string) *state.StateNode {
	t.Helper()
	ctx := context.Background()
	sn := node(name, cpu, v1.CapacityTypeOnDemand)
	n := sn.Node.DeepCopy()
	n.UID = ""
	if err := env.Client.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	n.Status = sn.Node.Status
	if err := env.Client.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	claim := sn.NodeClaim.DeepCopy()
	claim.CreationTimestamp = metav1.Time{}
	claim.Spec = v1.NodeClaimSpec{
		Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{fmt.Sprintf("c-%d", cpu)}}},
		NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
	}
	if err := env.Client.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	claim.Status = sn.NodeClaim.Status
	claim.Status.Capacity, claim.Status.Allocatable = sn.Capacity, sn.Allocatable
	for i := range claim.Status.Conditions {
		claim.Status.Conditions[i].LastTransitionTime = metav1.Now()
		claim.Status.Conditions[i].Reason = claim.Status.Conditions[i].Type
	}
	if err := env.Client.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if podCPU != "" {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod-" + name},
			Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Image: "pause",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(podCPU)}}}}},
		}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	return sn
}

// taintDisrupted puts the disrupted taint on the named Node, as a disruption command that did not finish
// leaves it, and returns the Node as written.
func taintDisrupted(t *testing.T, name string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = append(n.Spec.Taints, v1.DisruptedNoScheduleTaint)
	if err := env.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	return n
}

func tainted(ctx context.Context, name string) (bool, error) {
	n := &corev1.Node{}
	if err := cachedClient.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return false, err
	}
	return slices.ContainsFunc(n.Spec.Taints, v1.IsDisruptedTaint), nil
}

func replacements(ctx context.Context, candidate string) ([]v1.NodeClaim, error) {
	var list v1.NodeClaimList
	if err := cachedClient.List(ctx, &list); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(c v1.NodeClaim) bool { return c.Name == candidate+"-claim" }), nil
}

// A replace command launches its replacement first, waits for it to initialize, and only then deletes
// the candidate.
func TestReplaceLaunchesWaitsThenDeletes(t *testing.T) {
	h := newHarness(t)
	createPool(t)
	createNode(t, "big", 16, "1")
	var repl []v1.NodeClaim
	h.reconcileUntil("a replacement nodeclaim and the tainted candidate", func(ctx context.Context) (bool, error) {
		var err error
		repl, err = replacements(ctx, "big")
		if err != nil || len(repl) == 0 {
			return false, err
		}
		return tainted(ctx, "big")
	})
	if len(h.recorder.WithReason(disruption.ReasonDisruptionLaunching)) == 0 {
		t.Error("no DisruptionLaunching event")
	}
	ctx := context.Background()
	// The candidate stays while the replacement is not initialized.
	for range 3 {
		if err := h.controller.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		h.clock.Step(time.Second)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "big-claim"}, &v1.NodeClaim{}); err != nil {
		t.Fatalf("the candidate was deleted before its replacement initialized: %v", err)
	}
	r := &repl[0]
	meta.SetStatusCondition(&r.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"})
	if err := env.Client.Status().Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	h.reconcileUntil("the candidate's nodeclaim to be deleted", func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: "big-claim"}, &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if len(h.recorder.WithReason(disruption.ReasonDisruptionTerminating)) != 2 {
		t.Errorf("DisruptionTerminating events %v", h.recorder.WithReason(disruption.ReasonDisruptionTerminating))
	}
}

// If the replacement goes away, the candidate is untainted and kept.
func TestFailedReplacementUntaintsCandidate(t *testing.T) {
	h := newHarness(t)
	createPool(t)
	createNode(t, "failing", 16, "1")
	var repl []v1.NodeClaim
	h.reconcileUntil("a replacement nodeclaim", func(ctx context.Context) (bool, error) {
		var err error
		repl, err = replacements(ctx, "failing")
		return len(repl) > 0, err
	})
	ctx := context.Background()
	if err := env.Client.Delete(ctx, &repl[0]); err != nil {
		t.Fatal(err)
	}
	h.reconcileUntil("the candidate to be untainted", func(ctx context.Context) (bool, error) {
		on, err := tainted(ctx, "failing")
		return !on, err
	})
	if cluster.Deletions.IsMarked("fake:///failing") {
		t.Error("the candidate is still marked for deletion")
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "failing-claim"}, &v1.NodeClaim{}); err != nil {
		t.Errorf("the candidate was lost: %v", err)
	}
}

// A node left tainted by a run that did not finish its command is untainted on start.
func TestRestartUntaintsOrphans(t *testing.T) {
	h := newHarness(t)
	createPool(t)
	createNode(t, "orphan", 4, "3")
	ctx := context.Background()
	taintDisrupted(t, "orphan")
	// The controller looks for orphans once, in the cluster state, which its informers fill after the cache.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, sn := range cluster.Snapshot().Nodes {
			if sn.Node.Name == "orphan" && sn.NodeClaim != nil &&
				slices.ContainsFunc(sn.Taints, v1.IsDisruptedTaint) {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatal("the cluster state never showed the tainted orphan:", err)
	}
	h.reconcileUntil("the orphan to be untainted", func(ctx context.Context) (bool, error) {
		on, err := tainted(ctx, "orphan")
		return !on, err
	})
}

// An empty node is deleted after the validation delay.
func TestEmptyNodeDeletedAfterValidation(t *testing.T) {
	h := newHarness(t)
	createPool(t)
	createNode(t, "empty", 4, "")
	h.reconcileUntil("the empty node's claim to be deleted", func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: "empty-claim"}, &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	want := map[string]string{"nodepool": "default", "decision": "delete", "reason": "empty", "consolidation_type": "empty"}
	if n := sampleCount(t, h.registry, "karpenter_voluntary_disruption_decisions_by_nodepool_total", want); n != 1 {
		t.Errorf("decisions_by_nodepool_total%v = %v, want 1", want, n)
	}
}

// A Balanced pool's approved move is announced (ConsolidationApproved on the node and its claim, with
// upstream's message) and counted in karpenter_consolidation_moves_total and karpenter_consolidation_score.
// The nodes keep the API server's not-ready taint (no kubelet), so a's pod cannot move to b: a (c-4, one
// 1-cpu pod) is replaced by a c-2, saving $0.10 of the pool's $0.40/h (25 %) for 2 of its 4 disruption
// units (50 %): score 0.50, just at the threshold.
func TestBalancedApprovalPublished(t *testing.T) {
	h := newHarness(t)
	createPool(t, balanced)
	createNode(t, "a", 4, "1")
	createNode(t, "b", 4, "1")
	// The scores below assume both nodes: the loop must not decide while cluster state has seen only a.
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		withPods := 0
		for _, n := range cluster.Snapshot().Nodes {
			if len(n.Pods) == 1 {
				withPods++
			}
		}
		return withPods == 2, nil
	})
	if err != nil {
		t.Fatalf("cluster state never held both nodes with their pods: %v", err)
	}
	h.reconcileUntil("a ConsolidationApproved event", func(ctx context.Context) (bool, error) {
		return len(h.recorder.WithReason(disruption.ReasonConsolidationApproved)) > 0, nil
	})
	evs := h.recorder.WithReason(disruption.ReasonConsolidationApproved)
	if len(evs) != 2 || evs[0].Message != "score 0.50 >= threshold 0.50 (k: 2, savings 25.0%, disruption 50.0%)" {
		t.Fatalf("events = %+v", evs)
	}
	want := map[string]string{"decision": "approved", "nodepool": "default", "policy": "Balanced"}
	if n := sampleCount(t, h.registry, "karpenter_consolidation_moves_total", want); n < 1 {
		t.Errorf("karpenter_consolidation_moves_total%v = %v", want, n)
	}
	if n := sampleCount(t, h.registry, "karpenter_consolidation_score", want); n < 1 {
		t.Errorf("karpenter_consolidation_score%v has %v observations", want, n)
	}
}

// sampleCount is a counter's value, or a histogram's observation count, for the labels.
func sampleCount(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue metrics
				}
			}
			if m.GetHistogram() != nil {
				return float64(m.GetHistogram().GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// Why consolidation keeps a node is also in its NodeClaim's Consolidatable condition message (as in the
// Unconsolidatable event): a lone c-2 with a pod has nowhere cheaper to go.
func TestKeptNodeExplainedOnItsClaim(t *testing.T) {
	h := newHarness(t)
	createPool(t)
	createNode(t, "lone", 2, "1")
	var msg string
	h.reconcileUntil("the reason in the Consolidatable condition", func(ctx context.Context) (bool, error) {
		claim := &v1.NodeClaim{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "lone-claim"}, claim); err != nil {
			return false, err
		}
		if c := meta.FindStatusCondition(claim.Status.Conditions, v1.ConditionTypeConsolidatable); c != nil {
			msg = c.Message
		}
		return msg != "", nil
	})
	evs := h.recorder.WithReason(disruption.ReasonUnconsolidatable)
	if len(evs) == 0 || evs[0].Message != msg || !strings.Contains(msg, "cheaper") {
		t.Fatalf("condition message %q, events %+v", msg, evs)
	}
}
