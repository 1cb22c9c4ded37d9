package pod_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lathe-autoscaler/lathe/pkg/controllers/metrics/pod"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

func TestStartupDurationObservedOncePerPod(t *testing.T) {
	env, err := environment.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c := env.Client
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	created := p.CreationTimestamp.Time
	reg := prometheus.NewRegistry()
	ctrl := pod.NewController(pod.Deps{Client: c, Clock: clock.RealClock{}, Registerer: reg})
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "web"}}
	ctx := context.Background()
	reconcileOK := func() {
		t.Helper()
		if _, err := ctrl.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	reconcileOK()
	if got := sampleCountAndSum(t, reg); got.count != 0 {
		t.Fatalf("a pending pod was observed: %+v", got)
	}
	if n := seriesCount(t, reg, "karpenter_pods_unbound_time_seconds") + seriesCount(t, reg, "karpenter_pods_unstarted_time_seconds"); n != 2 {
		t.Fatalf("a pending unbound pod has %d unbound/unstarted series, want 2", n)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(2 * time.Second))},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(42 * time.Second))},
	}
	if err := c.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	reconcileOK()
	reconcileOK() // a second event about the same running pod is not a second observation
	got := sampleCountAndSum(t, reg)
	if got.count != 1 || got.sum != 42 {
		t.Fatalf("count %d sum %v, want 1 and 42", got.count, got.sum)
	}
	if got := histogram(t, reg, "karpenter_pods_bound_duration_seconds"); got.count != 1 || got.sum != 2 {
		t.Fatalf("bound duration count %d sum %v, want 1 and 2", got.count, got.sum)
	}
	if n := seriesCount(t, reg, "karpenter_pods_unbound_time_seconds") + seriesCount(t, reg, "karpenter_pods_unstarted_time_seconds"); n != 0 {
		t.Fatalf("a running pod has %d unbound/unstarted series, want none", n)
	}
	if n := seriesCount(t, reg, "karpenter_pods_state"); n != 1 {
		t.Fatalf("%d karpenter_pods_state series, want 1", n)
	}

	// After a restart or a change of leader, the pod is already running: the previous instance observed it.
	restartedReg := prometheus.NewRegistry()
	restarted := pod.NewController(pod.Deps{Client: c, Clock: clock.RealClock{}, Registerer: restartedReg})
	if _, err := restarted.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := sampleCountAndSum(t, restartedReg); got.count != 0 {
		t.Fatalf("a pod running before the controller started was observed again: %+v", got)
	}
}

type summary struct {
	count uint64
	sum   float64
}

func sampleCountAndSum(t *testing.T, reg *prometheus.Registry) summary {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "karpenter_pods_startup_duration_seconds" {
			s := f.GetMetric()[0].GetSummary()
			return summary{count: s.GetSampleCount(), sum: s.GetSampleSum()}
		}
	}
	t.Fatal("metric not found")
	return summary{}
}

func histogram(t *testing.T, reg *prometheus.Registry, name string) summary {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			h := f.GetMetric()[0].GetHistogram()
			return summary{count: h.GetSampleCount(), sum: h.GetSampleSum()}
		}
	}
	return summary{}
}

func seriesCount(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return len(f.GetMetric())
		}
	}
	return 0
}
