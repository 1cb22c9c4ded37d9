package provisioning_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// A provisioning pass reports its pending pods by effective zone, and the next pass replaces the zones it
// no longer sees. In the second pass the placeable pods are nominated to the NodeClaims the first created
// (the input places them there as fixed); they are still pending, and upstream counts them.
func TestProvisionReportsPendingPodsByEffectiveZone(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	h := newHarness()
	createPool(t, "default", nil)
	inZone := func(zone string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{v1.LabelTopologyZone: zone} }
	}
	createPendingPod(t, "free", "1", nil)
	createPendingPod(t, "pinned-1", "1", inZone("test-zone-1"))
	createPendingPod(t, "pinned-2", "1", inZone("test-zone-1"))
	nowhere := createPendingPod(t, "nowhere", "1", func(p *corev1.Pod) {
		inZone("test-zone-2")(p)
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-1"}}}}}}}}
	})
	provision(t, h.provisioner, 4)
	want := map[string]float64{"flexible": 1, "test-zone-1": 2, "none": 1}
	if got := pendingByZone(t, h); !equalCounts(got, want) {
		t.Errorf("pending pods by effective zone %v, want %v", got, want)
	}

	if err := env.Client.Delete(context.Background(), nowhere, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	want = map[string]float64{"flexible": 1, "test-zone-1": 2}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		provision(t, h.provisioner, 3)
		return equalCounts(pendingByZone(t, h), want), nil
	})
	if err != nil {
		t.Errorf("after the unplaceable pod went: pending pods by effective zone %v, want %v", pendingByZone(t, h), want)
	}
}

func pendingByZone(t *testing.T, h *harness) map[string]float64 {
	t.Helper()
	families, err := h.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "karpenter_scheduler_pending_pods_by_effective_zone_count" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["controller"] != "provisioner" {
				t.Errorf("series with controller %q", labels["controller"])
			}
			out[labels["zone"]] = m.GetGauge().GetValue()
		}
	}
	return out
}

func equalCounts(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
