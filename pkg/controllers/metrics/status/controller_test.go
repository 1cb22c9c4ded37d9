package status_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lathe-autoscaler/lathe/pkg/apis/scheme"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/metrics/status"
)

// TestNodeClaimConditionsAndTermination follows a NodeClaim through a condition transition and its
// termination and checks the series operatorpkg's status controller would export for it.
func TestNodeClaimConditionsAndTermination(t *testing.T) {
	ctx := context.Background()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1.NodeClaim{}).Build()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	reg := prometheus.NewRegistry()
	ctrl := status.NodeClaims(status.Deps{Client: kube, Clock: clk, Registerer: reg})

	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{v1.NodePoolLabelKey: "default"},
		Finalizers: []string{v1.TerminationFinalizer}}}
	if err := kube.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	setCondition(t, kube, nc, metav1.ConditionUnknown, "Launching", start)
	clk.Step(30 * time.Second)
	reconcileOnce(t, ctrl, nc.Name)
	series := gather(t, reg)
	want := map[string]string{"name": "a", "namespace": "", "type": "Launched", "status": "Unknown", "reason": "Launching",
		"karpenter_sh_nodepool": "default", "karpenter_k8s_aws_ec2nodeclass": ""}
	expect(t, series, "operator_nodeclaim_status_condition_count", want, 1)
	expect(t, series, "operator_nodeclaim_status_condition_current_status_seconds", want, 30)
	expect(t, series, "operator_status_condition_count", map[string]string{"group": "karpenter.sh", "kind": "NodeClaim", "type": "Launched"}, 1)

	setCondition(t, kube, nc, metav1.ConditionTrue, "Launched", start.Add(20*time.Second))
	reconcileOnce(t, ctrl, nc.Name)
	series = gather(t, reg)
	expect(t, series, "operator_nodeclaim_status_condition_count", map[string]string{"status": "Unknown"}, 0)
	expect(t, series, "operator_nodeclaim_status_condition_count", map[string]string{"status": "True", "reason": "Launched"}, 1)
	expect(t, series, "operator_nodeclaim_status_condition_transitions_total", map[string]string{"status": "True", "karpenter_sh_nodepool": "default"}, 1)
	expect(t, series, "operator_nodeclaim_status_condition_transition_seconds", map[string]string{"status": "Unknown"}, 1)

	if err := kube.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	// The fake client stamps the deletion with the wall clock.
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(nc.DeletionTimestamp.Add(5 * time.Second))
	reconcileOnce(t, ctrl, nc.Name)
	expect(t, gather(t, reg), "operator_nodeclaim_termination_current_time_seconds", map[string]string{"name": "a"}, 5)
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatal(err)
	}
	nc.Finalizers = nil
	if err := kube.Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, ctrl, nc.Name)
	series = gather(t, reg)
	expect(t, series, "operator_nodeclaim_termination_current_time_seconds", map[string]string{"name": "a"}, 0)
	expect(t, series, "operator_nodeclaim_status_condition_count", map[string]string{"name": "a"}, 0)
	expect(t, series, "operator_nodeclaim_termination_duration_seconds", map[string]string{"karpenter_sh_nodepool": "default"}, 1)
	expect(t, series, "operator_termination_duration_seconds", map[string]string{"kind": "NodeClaim"}, 1)
}

func setCondition(t *testing.T, kube client.Client, nc *v1.NodeClaim, s metav1.ConditionStatus, reason string, at time.Time) {
	t.Helper()
	if err := kube.Get(context.Background(), client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.Conditions = []metav1.Condition{{Type: "Launched", Status: s, Reason: reason, LastTransitionTime: metav1.NewTime(at)}}
	if err := kube.Status().Update(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
}

func reconcileOnce(t *testing.T, r reconcile.Reconciler, name string) {
	t.Helper()
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range families {
		out[f.GetName()] = f
	}
	return out
}

// expect checks the sum over the family's series matching labels: gauge and counter values, histogram
// sample counts.
func expect(t *testing.T, families map[string]*dto.MetricFamily, name string, labels map[string]string, want float64) {
	t.Helper()
	total := 0.0
next:
	for _, m := range families[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if value, ok := have[k]; !ok || value != v {
				continue next
			}
		}
		total += m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	if total != want {
		t.Errorf("%s%v = %v, want %v", name, labels, total, want)
	}
}

// BenchmarkReconcileAmongMany reconciles one NodeClaim of 2,000 that each carry five conditions: the cost
// of an update must not grow with the number of other objects' series.
func BenchmarkReconcileAmongMany(b *testing.B) {
	s, err := scheme.New()
	if err != nil {
		b.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1.NodeClaim{}).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	ctrl := status.NodeClaims(status.Deps{Client: kube, Clock: clk, Registerer: prometheus.NewRegistry()})
	ctx := context.Background()
	for i := range 2000 {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("nc-%d", i), Labels: map[string]string{v1.NodePoolLabelKey: "default"}}}
		for _, typ := range []string{"Launched", "Registered", "Initialized", "Ready", "Consolidatable"} {
			nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: typ, LastTransitionTime: metav1.NewTime(clk.Now())})
		}
		if err := kube.Create(ctx, nc); err != nil {
			b.Fatal(err)
		}
		if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: fmt.Sprintf("nc-%d", i%2000)}}); err != nil {
			b.Fatal(err)
		}
	}
}
