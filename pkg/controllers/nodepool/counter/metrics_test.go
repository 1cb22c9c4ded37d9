package counter

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestResourceTypeLabel checks upstream's resource_type spelling (ephemeral_storage) and cpu in cores.
func TestResourceTypeLabel(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newPoolMetrics(reg)
	m.set("a", corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"), corev1.ResourceCPU: resource.MustParse("1500m")}, nil)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "resource_type" {
					got[l.GetValue()] = s.GetGauge().GetValue()
				}
			}
		}
	}
	want := map[string]float64{"ephemeral_storage": 20 * 1024 * 1024 * 1024, "cpu": 1.5}
	if len(got) != len(want) || got["ephemeral_storage"] != want["ephemeral_storage"] || got["cpu"] != want["cpu"] {
		t.Errorf("usage by resource_type = %v, want %v", got, want)
	}
}
