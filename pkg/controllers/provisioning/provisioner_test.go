package provisioning_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	eventsfake "github.com/lathe-autoscaler/lathe/pkg/events/fake"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/state"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/informed"
)

var (
	env *environment.Environment
	// cachedClient and cluster are a manager's cache and the cluster state its informers feed, as in
	// production.
	cachedClient client.Client
	cluster      *state.Cluster
)

func TestMain(m *testing.M) {
	var err error
	if env, err = environment.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stop, err := startState()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	stop()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// startState runs a manager with the cluster-state informers against the test API server.
func startState() (func(), error) {
	view, err := informed.Start(env.Config, env.Scheme)
	if err != nil {
		return nil, err
	}
	cachedClient, cluster = view.Client, view.State
	return view.Stop, nil
}

// provision runs one provisioning pass once the cluster state has caught up with the API server and the
// cache shows the pending pods.
func provision(t *testing.T, p *provisioning.Provisioner, pendingPods int) *solver.Plan {
	t.Helper()
	ctx := context.Background()
	var plan *solver.Plan
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := cachedClient.List(ctx, &pods, client.InNamespace("default")); err != nil {
			return false, err
		}
		pending := 0
		for i := range pods.Items {
			if ok, _ := provisioning.Provisionable(&pods.Items[i]); ok {
				pending++
			}
		}
		if pending < pendingPods {
			return false, nil
		}
		var err error
		plan, err = p.Provision(ctx)
		if errors.Is(err, provisioning.ErrNotSynced) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("provisioning: %v", err)
	}
	return plan
}

// harness is a provisioner over the test API server with a fake cloud and event recorder.
type harness struct {
	provisioner *provisioning.Provisioner
	recorder    *eventsfake.Recorder
	cloud       *fake.CloudProvider
	registry    *prometheus.Registry
}

func newHarness() *harness { return newHarnessWithClient(cachedClient) }

// newHarnessWithClient builds the harness on a client of the test's choice (one that injects failures,
// for example).
func newHarnessWithClient(c client.Client) *harness { return newHarnessWith(c, nil) }

// newHarnessWith builds the harness on a client of the test's choice, with deps changed by mutate (when not
// nil).
func newHarnessWith(c client.Client, mutate func(*provisioning.Deps)) *harness {
	rec := &eventsfake.Recorder{}
	cloud := fake.New(catalog.KarpenterBenchmark()[:64]...)
	reg := prometheus.NewRegistry()
	deps := provisioning.Deps{
		Client: c, Cluster: cluster, CloudProvider: cloud, Clock: clocktesting.NewFakeClock(time.Now()), Recorder: rec,
		Registerer: reg, BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second,
	}
	if mutate != nil {
		mutate(&deps)
	}
	return &harness{provisioner: provisioning.NewProvisioner(deps), recorder: rec, cloud: cloud, registry: reg}
}

// cleanup deletes every object the provisioning tests create. NodeClaims are created with the termination
// finalizer, and no termination controller runs here to remove it.
func cleanup(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var claims v1.NodeClaimList
	if err := env.Client.List(ctx, &claims); err != nil {
		t.Fatal(err)
	}
	for i := range claims.Items {
		releaseClaim(t, &claims.Items[i])
	}
	for _, obj := range []client.Object{&v1.NodeClaim{}, &v1.NodePool{}} {
		if err := env.Client.DeleteAllOf(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
}

// releaseClaim takes the termination finalizer off claim, as the termination controller (which doesn't run
// here) would once its instance is gone.
func releaseClaim(t *testing.T, claim *v1.NodeClaim) {
	t.Helper()
	if controllerutil.RemoveFinalizer(claim, v1.TerminationFinalizer) {
		if err := env.Client.Update(context.Background(), claim); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
}

func createPool(t *testing.T, name string, mutate func(*v1.NodePool)) *v1.NodePool {
	t.Helper()
	pool := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		}}},
	}
	if mutate != nil {
		mutate(pool)
	}
	if err := env.Client.Create(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

// createPendingPod creates a pod the kube-scheduler has marked unschedulable.
func createPendingPod(t *testing.T, name, cpu string, mutate func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
	if mutate != nil {
		mutate(pod)
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// TestProvisionPlansPodsTheSchedulerHasNotTried: with PLAN_UNTRIED_PODS a pass plans a pod the kube-scheduler
// has not tried yet a second after its creation, next to the one it marked unschedulable; without it, only
// the marked one.
func TestProvisionPlansPodsTheSchedulerHasNotTried(t *testing.T) {
	for _, untried := range []bool{true, false} {
		t.Run(fmt.Sprintf("PLAN_UNTRIED_PODS=%v", untried), func(t *testing.T) {
			t.Cleanup(func() { cleanup(t) })
			h := newHarnessWith(cachedClient, func(d *provisioning.Deps) {
				d.PlanUntriedPods = untried
				d.Clock = clocktesting.NewFakeClock(time.Now().Add(5 * time.Second)) // the pods below are 5s old
			})
			createPool(t, "default", nil)
			createPendingPod(t, "marked", "1", nil)
			fresh := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "untried", Namespace: "default"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
			}
			if err := env.Client.Create(context.Background(), fresh); err != nil {
				t.Fatal(err)
			}
			err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				return cachedClient.Get(ctx, client.ObjectKeyFromObject(fresh), &corev1.Pod{}) == nil, nil
			})
			if err != nil {
				t.Fatalf("waiting for the cache to show the untried pod: %v", err)
			}
			provision(t, h.provisioner, 1)
			want := []string{"marked"}
			if untried {
				want = []string{"marked", "untried"}
			}
			var got []string
			for _, e := range h.recorder.WithReason("Nominated") {
				got = append(got, e.InvolvedObject.(*corev1.Pod).Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("pods nominated: %v, want %v", got, want)
			}
		})
	}
}

func listClaims(t *testing.T) []v1.NodeClaim {
	t.Helper()
	var list v1.NodeClaimList
	if err := env.Client.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func TestProvisionCreatesNodeClaimsOnce(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	h := newHarness()
	pool := createPool(t, "default", nil)
	for i := 0; i < 3; i++ {
		createPendingPod(t, fmt.Sprintf("web-%d", i), "1", nil)
	}
	plan := provision(t, h.provisioner, 3)
	claims := listClaims(t)
	if len(claims) == 0 || len(claims) != len(plan.NodeClaims) {
		t.Fatalf("created %d nodeclaims, plan has %d", len(claims), len(plan.NodeClaims))
	}
	for _, c := range claims {
		if !strings.HasPrefix(c.Name, "default-") || c.Labels[v1.NodePoolLabelKey] != "default" {
			t.Errorf("claim %s labels %v", c.Name, c.Labels)
		}
		if len(c.OwnerReferences) != 1 || c.OwnerReferences[0].UID != pool.UID {
			t.Errorf("claim %s owners %v", c.Name, c.OwnerReferences)
		}
		if c.Spec.Resources.Requests.Cpu().Cmp(resource.MustParse("1")) < 0 {
			t.Errorf("claim %s requests %v", c.Name, c.Spec.Resources.Requests)
		}
	}
	if got := len(h.recorder.WithReason("Nominated")); got != 3 {
		t.Errorf("%d Nominated events, want 3", got)
	}
	// The pods are still pending (nothing launched them); a second pass must count the claims in flight.
	provision(t, h.provisioner, 3)
	if again := listClaims(t); len(again) != len(claims) {
		t.Fatalf("second pass created more nodeclaims: %d, want %d", len(again), len(claims))
	}
}

func TestProvisionExplainsUnschedulablePods(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	h := newHarness()
	createPool(t, "default", nil)
	createPendingPod(t, "huge", "1000", nil)
	createPendingPod(t, "gpu", "1", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"example.com/gpu": "true"} })
	provision(t, h.provisioner, 2)
	if n := len(listClaims(t)); n != 0 {
		t.Fatalf("created %d nodeclaims for pods that fit nowhere", n)
	}
	failed := h.recorder.WithReason("FailedScheduling")
	if len(failed) != 2 {
		t.Fatalf("%d FailedScheduling events, want 2", len(failed))
	}
	for _, e := range failed {
		if !strings.Contains(e.Message, "nodepool default") {
			t.Errorf("reason does not name the nodepool: %q", e.Message)
		}
	}
}

func TestProvisionRespectsLimits(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	h := newHarness()
	createPool(t, "default", func(p *v1.NodePool) {
		p.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("4")}
	})
	for i := 0; i < 8; i++ {
		createPendingPod(t, fmt.Sprintf("p-%d", i), "1", nil)
	}
	provision(t, h.provisioner, 8)
	// Limits apply to capacity, not to what the pods request: launch every claim and add up what it holds.
	total := resource.Quantity{}
	for _, c := range listClaims(t) {
		launched, err := h.cloud.Create(context.Background(), &c)
		if err != nil {
			t.Fatalf("launching %s: %v", c.Name, err)
		}
		total.Add(*launched.Status.Capacity.Cpu())
	}
	if total.Cmp(resource.MustParse("4")) > 0 {
		t.Fatalf("claims launch %s cpu, over the pool's limit of 4", total.String())
	}
	if len(h.recorder.WithReason("FailedScheduling")) == 0 {
		t.Error("no pod was reported unschedulable although the limit cannot hold 8 cpu")
	}
}

// A pod selecting a well-known AWS label the NodePool leaves open gets a NodeClaim narrowed to that label.
func TestProvisionWellKnownProviderLabel(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	its, err := catalog.EC2(catalog.EC2Options{Categories: []string{"c", "m", "r"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &eventsfake.Recorder{}
	p := provisioning.NewProvisioner(provisioning.Deps{
		Client: cachedClient, Cluster: cluster, CloudProvider: fake.New(its...), Clock: clocktesting.NewFakeClock(time.Now()), Recorder: rec,
		Registerer: prometheus.NewRegistry(), BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second,
	})
	createPool(t, "default", func(p *v1.NodePool) {
		p.Spec.Template.Spec.Requirements = append(p.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}})
	})
	createPendingPod(t, "compute", "1", func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{"karpenter.k8s.aws/instance-family": "c6a"}
	})
	provision(t, p, 1)
	claims := listClaims(t)
	if len(claims) != 1 {
		var reasons []string
		for _, e := range rec.WithReason("FailedScheduling") {
			reasons = append(reasons, e.Message)
		}
		t.Fatalf("created %d nodeclaims, want 1 (FailedScheduling: %q)", len(claims), reasons)
	}
	family, types := false, 0
	for _, r := range claims[0].Spec.Requirements {
		switch r.Key {
		case "karpenter.k8s.aws/instance-family":
			family = r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 && r.Values[0] == "c6a"
		case v1.LabelInstanceType:
			for _, name := range r.Values {
				types++
				if !strings.HasPrefix(name, "c6a.") {
					t.Errorf("instance type %s is not a c6a", name)
				}
			}
		}
	}
	if !family || types == 0 {
		t.Errorf("requirements %v should pin the family and list c6a types", claims[0].Spec.Requirements)
	}
}

func TestProvisionSkipsAPoolWhoseInstanceTypesFail(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	h := newHarness()
	h.cloud.InstanceTypeErrors = map[string]error{"broken": errors.New("node class has no subnets")}
	createPool(t, "broken", nil)
	createPool(t, "working", nil)
	createPendingPod(t, "web", "1", nil)
	provision(t, h.provisioner, 1)
	claims := listClaims(t)
	if len(claims) != 1 || claims[0].Labels[v1.NodePoolLabelKey] != "working" {
		t.Fatalf("nodeclaims %v, want one from the working pool", claims)
	}
	events := h.recorder.WithReason("InstanceTypesUnresolved")
	if len(events) != 1 || !strings.Contains(events[0].Message, "no subnets") {
		t.Fatalf("events %v, want one with the provider's error", events)
	}
	if pool, ok := events[0].InvolvedObject.(*v1.NodePool); !ok || pool.Name != "broken" {
		t.Fatalf("event on %v, want the broken pool", events[0].InvolvedObject)
	}
	// The broken pool says why in its status; the working one carries no such condition.
	ctx := context.Background()
	resolved := func(name string) *metav1.Condition {
		pool := &v1.NodePool{}
		if err := cachedClient.Get(ctx, client.ObjectKey{Name: name}, pool); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(pool.Status.Conditions, provisioning.ConditionTypeInstanceTypesResolved)
	}
	if c := resolved("broken"); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "no subnets") {
		t.Fatalf("broken pool's %s condition %+v, want False with the provider's error", provisioning.ConditionTypeInstanceTypesResolved, c)
	}
	if c := resolved("working"); c != nil {
		t.Fatalf("working pool has condition %+v, want none", c)
	}
	// Once the provider lists the broken pool's types again, a pass turns the condition True.
	h.cloud.InstanceTypeErrors = nil
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		if _, err := h.provisioner.Provision(ctx); err != nil && !errors.Is(err, provisioning.ErrNotSynced) {
			return false, err
		}
		c := resolved("broken")
		return c != nil && c.Status == metav1.ConditionTrue, nil
	})
	if err != nil {
		t.Fatalf("condition of the recovered pool: %+v (%v)", resolved("broken"), err)
	}
}
