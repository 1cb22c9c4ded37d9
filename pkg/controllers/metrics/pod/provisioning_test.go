package pod_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lathe-autoscaler/lathe/pkg/controllers/metrics/pod"
	"github.com/lathe-autoscaler/lathe/pkg/state"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

// gauge is the value of the family's single series (ok false when it has none).
func gauge(t *testing.T, reg *prometheus.Registry, name string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestProvisioningTimes follows a pod through the provisioner (taken up 1 s after its creation, decided on
// and found a place at 4 s), binding (10 s) and readiness (42 s): the undecided, unbound and unstarted
// gauges count from the provisioner's times, and the decision, bound and startup durations are observed
// from them.
func TestProvisioningTimes(t *testing.T) {
	env, err := environment.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c := env.Client
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	created := p.CreationTimestamp.Time
	clk := clocktesting.NewFakeClock(created)
	reg := prometheus.NewRegistry()
	cluster := state.NewCluster(state.Deps{Clock: clk, Registerer: reg})
	ctrl := pod.NewController(pod.Deps{Client: c, Clock: clk, Registerer: reg, Scheduling: cluster.Scheduling})
	name := types.NamespacedName{Namespace: "default", Name: "web"}
	reconcileOK := func() {
		t.Helper()
		if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: name}); err != nil {
			t.Fatal(err)
		}
	}
	expectGauge := func(family string, want float64) {
		t.Helper()
		if got, ok := gauge(t, reg, family); !ok || got != want {
			t.Fatalf("%s = %v (present %v), want %v", family, got, ok, want)
		}
	}
	expectNoGauge := func(family string) {
		t.Helper()
		if got, ok := gauge(t, reg, family); ok {
			t.Fatalf("%s = %v, want no series", family, got)
		}
	}

	clk.Step(time.Second)
	cluster.Scheduling.Ack(name)
	clk.Step(2 * time.Second)
	reconcileOK()
	expectGauge("karpenter_pods_provisioning_scheduling_undecided_time_seconds", 2)
	expectNoGauge("karpenter_pods_provisioning_unbound_time_seconds")

	clk.Step(time.Second)
	cluster.Scheduling.Decided([]types.NamespacedName{name}, nil)
	cluster.Scheduling.Decided([]types.NamespacedName{name}, nil) // a later pass is not a first decision
	if got := histogram(t, reg, "karpenter_pods_scheduling_decision_duration_seconds"); got.count != 1 || got.sum != 3 {
		t.Fatalf("decision duration count %d sum %v, want 1 and 3", got.count, got.sum)
	}
	clk.Step(5 * time.Second)
	reconcileOK()
	expectNoGauge("karpenter_pods_provisioning_scheduling_undecided_time_seconds")
	expectGauge("karpenter_pods_provisioning_unbound_time_seconds", 5)
	expectGauge("karpenter_pods_provisioning_unstarted_time_seconds", 5)

	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(10 * time.Second))},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(42 * time.Second))},
	}
	if err := c.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	clk.Step(40 * time.Second)
	reconcileOK()
	if got := histogram(t, reg, "karpenter_pods_provisioning_bound_duration_seconds"); got.count != 1 || got.sum != 6 {
		t.Fatalf("provisioning bound duration count %d sum %v, want 1 and 6", got.count, got.sum)
	}
	if got := histogram(t, reg, "karpenter_pods_provisioning_startup_duration_seconds"); got.count != 1 || got.sum != 38 {
		t.Fatalf("provisioning startup duration count %d sum %v, want 1 and 38", got.count, got.sum)
	}
	expectNoGauge("karpenter_pods_provisioning_unbound_time_seconds")
	expectNoGauge("karpenter_pods_provisioning_unstarted_time_seconds")
	if acked, decided, schedulable := cluster.Scheduling.Times(name); !acked.IsZero() || !decided.IsZero() || !schedulable.IsZero() {
		t.Fatalf("a started pod's scheduling times are kept: %v %v %v", acked, decided, schedulable)
	}
}
