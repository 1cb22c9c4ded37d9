package instancetype_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instancetype"
)

// The acceptance test of the shared model: for every type of the embedded catalog, what the AWS provider
// makes of the fake EC2's DescribeInstanceTypes has the capacity, allocatable and labels the simulated
// provider and `lathe simulate` compute from the catalog (catalog.EC2 + catalog.ForNodeClassWithVMOverhead),
// for no node class, the default one and one with kubelet overrides (maxPods, podsPerCore, kubeReserved),
// at the default and another VM_MEMORY_OVERHEAD_PERCENT.
func TestAWSProviderMatchesTheCatalogForEveryType(t *testing.T) {
	overrides := al2023(&awsv1.KubeletConfiguration{
		MaxPods: ptr.To[int32](50), PodsPerCore: ptr.To[int32](8),
		KubeReserved: map[string]string{"cpu": "150m", "memory": "600Mi", "ephemeral-storage": "2Gi"},
	})
	base, err := catalog.EC2(catalog.EC2Options{})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	r := fakeaws.New(fakeaws.Options{Clock: clk}).Start()
	t.Cleanup(r.Close)
	for _, vm := range []float64{catalog.DefaultVMMemoryOverheadPercent, 0.10} {
		e := setupOn(r, clk, func(o *instancetype.Options) { o.VMMemoryOverheadPercent = vm })
		for _, tc := range []struct {
			name      string
			nodeClass *awsv1.EC2NodeClass
		}{{"no node class", nil}, {"default node class", al2023(nil)}, {"kubelet overrides", overrides}} {
			t.Run(fmt.Sprintf("%s, VM overhead %v", tc.name, vm), func(t *testing.T) {
				got := map[string]*cloudprovider.InstanceType{}
				for _, it := range e.list(t, tc.nodeClass) {
					got[it.Name] = it
				}
				want := catalog.ForNodeClassWithVMOverhead(base, tc.nodeClass, vm)
				if len(got) != len(want) {
					t.Errorf("%d types, the catalog has %d", len(got), len(want))
				}
				for _, w := range want {
					g, ok := got[w.Name]
					if !ok {
						t.Errorf("%s: missing", w.Name)
						continue
					}
					sameResources(t, w.Name+" capacity", g.Capacity, w.Capacity)
					sameResources(t, w.Name+" allocatable", g.Allocatable(), w.Allocatable())
					sameLabels(t, w.Name, g, w)
				}
			})
		}
	}
}

func sameResources(t *testing.T, what string, got, want corev1.ResourceList) {
	t.Helper()
	for name, w := range want {
		if g, ok := got[name]; !ok || g.Cmp(w) != 0 {
			t.Errorf("%s %s = %s, catalog %s", what, name, g.String(), w.String())
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s has %s, the catalog not", what, name)
		}
	}
}

// sameLabels compares every requirement but the offering-derived zone and capacity type.
func sameLabels(t *testing.T, name string, got, want *cloudprovider.InstanceType) {
	t.Helper()
	keys := map[string]bool{}
	for _, k := range append(got.Requirements.Keys(), want.Requirements.Keys()...) {
		keys[k] = true
	}
	for k := range keys {
		if k == v1.LabelTopologyZone || k == v1.CapacityTypeLabelKey {
			continue
		}
		if g, w := got.Requirements.Get(k).String(), want.Requirements.Get(k).String(); g != w {
			t.Errorf("%s %s: %s, catalog %s", name, k, g, w)
		}
	}
}
