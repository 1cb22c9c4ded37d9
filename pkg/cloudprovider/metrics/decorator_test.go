package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	cpmetrics "github.com/lathe-autoscaler/lathe/pkg/cloudprovider/metrics"
)

// TestDecoratorMeasuresCalls checks the duration and error series of decorated calls, labeled with the
// controller, method, provider and typed error, and the instance type gauges GetInstanceTypes sets.
func TestDecoratorMeasuresCalls(t *testing.T) {
	it := &cloudprovider.InstanceType{Name: "m5.large",
		Capacity:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		Offerings: cloudprovider.Offerings{{Zone: "z1", CapacityType: v1.CapacityTypeSpot, Price: 0.04, Available: false}}}
	cloud := fake.New(it)
	reg := prometheus.NewRegistry()
	measured := cpmetrics.Decorate(cloud, "nodeclaim.termination", cpmetrics.NewCollectors(reg))
	ctx := context.Background()

	cloud.InjectError(fake.MethodDelete, cloudprovider.NewNodeClaimNotFoundError(errors.New("gone")))
	if err := measured.Delete(ctx, &v1.NodeClaim{}); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete returned %v, want the provider's error", err)
	}
	cloud.InjectError(fake.MethodGet, errors.New("throttled"))
	_, _ = measured.Get(ctx, "fake:///z1/1")
	if _, err := measured.GetInstanceTypes(ctx, &v1.NodePool{}); err != nil {
		t.Fatal(err)
	}

	series := gather(t, reg)
	want := map[string]float64{
		`karpenter_cloudprovider_duration_seconds{controller="nodeclaim.termination",method="Delete",provider="fake"}`:                            1,
		`karpenter_cloudprovider_duration_seconds{controller="nodeclaim.termination",method="GetInstanceTypes",provider="fake"}`:                  1,
		`karpenter_cloudprovider_errors_total{controller="nodeclaim.termination",error="NodeClaimNotFoundError",method="Delete",provider="fake"}`: 1,
		`karpenter_cloudprovider_errors_total{controller="nodeclaim.termination",error="",method="Get",provider="fake"}`:                          1,
		`karpenter_cloudprovider_instance_type_cpu_cores{instance_type="m5.large"}`:                                                               2,
		`karpenter_cloudprovider_instance_type_memory_bytes{instance_type="m5.large"}`:                                                            8 << 30,
		`karpenter_cloudprovider_instance_type_offering_available{capacity_type="spot",instance_type="m5.large",zone="z1"}`:                       0,
		`karpenter_cloudprovider_instance_type_offering_price_estimate{capacity_type="spot",instance_type="m5.large",zone="z1"}`:                  0.04,
	}
	for key, value := range want {
		if got, ok := series[key]; !ok || got != value {
			t.Errorf("%s = %v (exported %v), want %v", key, got, ok, value)
		}
	}

	// The provider's answer changes in place (an offering becomes available at a new price): the gauges follow.
	it.Offerings[0].Available, it.Offerings[0].Price = true, 0.05
	if _, err := measured.GetInstanceTypes(ctx, &v1.NodePool{}); err != nil {
		t.Fatal(err)
	}
	series = gather(t, reg)
	for key, value := range map[string]float64{
		`karpenter_cloudprovider_instance_type_offering_available{capacity_type="spot",instance_type="m5.large",zone="z1"}`:      1,
		`karpenter_cloudprovider_instance_type_offering_price_estimate{capacity_type="spot",instance_type="m5.large",zone="z1"}`: 0.05,
	} {
		if got := series[key]; got != value {
			t.Errorf("after the change %s = %v, want %v", key, got, value)
		}
	}
}

// BenchmarkGetInstanceTypes is one decorated GetInstanceTypes call answering 800 instance types of six
// offerings each, the same answer every time, as controllers ask for it on many reconciles.
func BenchmarkGetInstanceTypes(b *testing.B) {
	var types []*cloudprovider.InstanceType
	for i := range 800 {
		it := &cloudprovider.InstanceType{Name: fmt.Sprintf("type-%d", i),
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}}
		for _, zone := range []string{"z1", "z2", "z3"} {
			for _, ct := range []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand} {
				it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: zone, CapacityType: ct, Price: 0.1, Available: true})
			}
		}
		types = append(types, it)
	}
	measured := cpmetrics.Decorate(fake.New(types...), "nodeclaim.drift", cpmetrics.NewCollectors(prometheus.NewRegistry()))
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, err := measured.GetInstanceTypes(ctx, &v1.NodePool{}); err != nil {
			b.Fatal(err)
		}
	}
}

// gather renders every series as name{labels} → value (histogram sample count).
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName() + "{"
			for i, l := range m.GetLabel() {
				if i > 0 {
					key += ","
				}
				key += l.GetName() + `="` + l.GetValue() + `"`
			}
			key += "}"
			out[key] = m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return out
}
