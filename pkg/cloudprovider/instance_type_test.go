package cloudprovider_test

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

func instanceType(name string, cpu int64, offerings ...cloudprovider.Offering) *cloudprovider.InstanceType {
	return &cloudprovider.InstanceType{
		Name:         name,
		Requirements: scheduling.FromLabels(map[string]string{v1.LabelInstanceType: name, v1.LabelArch: "amd64"}),
		Offerings:    offerings,
		Capacity:     corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI)},
		Overhead: cloudprovider.InstanceTypeOverhead{
			KubeReserved:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			SystemReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")},
		},
	}
}

func TestAllocatable(t *testing.T) {
	it := instanceType("a", 2)
	got := it.Allocatable()[corev1.ResourceCPU]
	if got.MilliValue() != 1850 {
		t.Errorf("allocatable cpu = %s, want 1850m", got.String())
	}
}

func TestOfferings(t *testing.T) {
	ofs := cloudprovider.Offerings{
		{Zone: "b", CapacityType: v1.CapacityTypeOnDemand, Price: 1, Available: true},
		{Zone: "a", CapacityType: v1.CapacityTypeSpot, Price: 0.3, Available: true},
		{Zone: "c", CapacityType: v1.CapacityTypeSpot, Price: 0.2, Available: false},
	}
	if got := len(ofs.Available()); got != 2 {
		t.Errorf("available = %d, want 2", got)
	}
	cheapest, _ := ofs.Available().Cheapest()
	if cheapest.Zone != "a" {
		t.Errorf("cheapest available = %+v, want zone a", cheapest)
	}
	onDemand := scheduling.FromLabels(map[string]string{v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand})
	if got := ofs.Compatible(onDemand); len(got) != 1 || got[0].Zone != "b" {
		t.Errorf("on-demand offerings = %+v", got)
	}
	if order := ofs.OrderByPrice(); order[0].Zone != "c" || order[2].Zone != "b" {
		t.Errorf("order = %+v", order)
	}
	if _, ok := cloudprovider.Offerings(nil).Cheapest(); ok {
		t.Errorf("empty list has a cheapest offering")
	}
}

// TestCheapestCompatible: CheapestCompatible picks what filtering the available, compatible offerings and
// taking the cheapest picks, equal prices, zones and reservations included.
func TestCheapestCompatible(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	pick := func(values ...string) string { return values[rng.Intn(len(values))] }
	for round := range 2000 {
		var ofs cloudprovider.Offerings
		for k := range rng.Intn(7) {
			// Capacity tells apart offerings the order ranks equal, so the test sees which one is picked.
			o := cloudprovider.Offering{Zone: pick("a", "b"), CapacityType: pick(v1.CapacityTypeOnDemand, v1.CapacityTypeSpot, v1.CapacityTypeReserved),
				Price: float64(rng.Intn(2)), Available: rng.Intn(4) > 0, Reservation: &cloudprovider.Reservation{Capacity: k}}
			if rng.Intn(4) == 0 {
				o.Reservation = &cloudprovider.Reservation{ID: pick("r1", "r2"), Capacity: k, Labels: map[string]string{"reservation": pick("r1", "r2")}}
			}
			ofs = append(ofs, o)
		}
		reqs := scheduling.Requirements{}
		if rng.Intn(2) == 0 {
			reqs.Add(scheduling.MustRequirement(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, pick("a", "b"), pick("b", "c")))
		}
		if rng.Intn(2) == 0 {
			reqs.Add(scheduling.MustRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpNotIn, pick(v1.CapacityTypeSpot, v1.CapacityTypeReserved)))
		}
		if rng.Intn(3) == 0 {
			reqs.Add(scheduling.MustRequirement("reservation", corev1.NodeSelectorOpIn, pick("r1", "r2")))
		}
		want, wantOK := ofs.Available().Compatible(reqs).Cheapest()
		got, gotOK := ofs.CheapestCompatible(reqs)
		if gotOK != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: offerings %+v, requirements %v: CheapestCompatible = %+v, %v; the filters give %+v, %v", round, ofs, reqs, got, gotOK, want, wantOK)
		}
	}
}

func TestInstanceTypesOrderAndCompatible(t *testing.T) {
	od := func(zone string, price float64) cloudprovider.Offering {
		return cloudprovider.Offering{Zone: zone, CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true}
	}
	its := cloudprovider.InstanceTypes{
		instanceType("big", 8, od("a", 4)),
		instanceType("small", 2, od("a", 1), od("b", 0.5)),
		instanceType("gone", 1, cloudprovider.Offering{Zone: "a", Price: 0.1}),
	}
	zoneA := scheduling.FromLabels(map[string]string{v1.LabelTopologyZone: "a"})
	got := its.Compatible(zoneA).OrderByPrice(zoneA)
	if len(got) != 2 || got[0].Name != "small" || got[1].Name != "big" {
		t.Errorf("compatible in zone a, by price: %v", names(got))
	}
	if got := its.Truncate(1); len(got) != 1 {
		t.Errorf("truncate: %v", names(got))
	}
	if got := its.Named("small"); got != its[1] {
		t.Errorf("named small: %v", got)
	}
	if got := its.Named("absent"); got != nil {
		t.Errorf("named absent: %v, want nil", got)
	}
}

func names(its cloudprovider.InstanceTypes) []string {
	var out []string
	for _, it := range its {
		out = append(out, it.Name)
	}
	return out
}

func TestTypedErrors(t *testing.T) {
	base := errors.New("boom")
	cases := []struct {
		name   string
		err    error
		is     func(error) bool
		ignore func(error) error
	}{
		{"not found", cloudprovider.NewNodeClaimNotFoundError(base), cloudprovider.IsNodeClaimNotFoundError, cloudprovider.IgnoreNodeClaimNotFoundError},
		{"insufficient capacity", cloudprovider.NewInsufficientCapacityError(base), cloudprovider.IsInsufficientCapacityError, cloudprovider.IgnoreInsufficientCapacityError},
		{"nodeclass not ready", cloudprovider.NewNodeClassNotReadyError(base), cloudprovider.IsNodeClassNotReadyError, cloudprovider.IgnoreNodeClassNotReadyError},
		{"create", cloudprovider.NewCreateError(base, "LaunchFailed", "no subnets"), cloudprovider.IsCreateError, cloudprovider.IgnoreCreateError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wrapped := fmt.Errorf("launching, %w", tc.err)
			if !tc.is(wrapped) || !errors.Is(wrapped, base) {
				t.Errorf("wrapped error not recognised")
			}
			if tc.ignore(wrapped) != nil || tc.ignore(base) == nil {
				t.Errorf("ignore helper wrong")
			}
			if tc.is(base) {
				t.Errorf("plain error recognised as typed")
			}
		})
	}
}

// BenchmarkCompatibleWithTypeList filters a catalog of 800 types for a NodeClaim's requirements as the
// provisioner writes them: a list of 60 instance types and an architecture.
func BenchmarkCompatibleWithTypeList(b *testing.B) {
	var its cloudprovider.InstanceTypes
	var names []string
	for i := range 800 {
		name := fmt.Sprintf("type-%03d.large", i)
		its = append(its, instanceType(name, int64(2+i%16),
			cloudprovider.Offering{Zone: "a", CapacityType: v1.CapacityTypeOnDemand, Price: 0.1, Available: true},
			cloudprovider.Offering{Zone: "b", CapacityType: v1.CapacityTypeSpot, Price: 0.05, Available: true}))
		if i%13 == 0 && len(names) < 60 {
			names = append(names, name)
		}
	}
	reqs, err := scheduling.FromNodePoolRequirements([]v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: names},
		{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if got := its.Compatible(reqs); len(got) != len(names) {
			b.Fatalf("%d compatible, want %d", len(got), len(names))
		}
	}
}
