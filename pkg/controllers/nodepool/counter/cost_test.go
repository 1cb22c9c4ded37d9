package counter

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lathe-autoscaler/lathe/pkg/apis/scheme"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	fakecloud "github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
)

type syncedState struct{}

func (syncedState) Synced(context.Context) bool                  { return true }
func (syncedState) NodePoolResources(string) corev1.ResourceList { return corev1.ResourceList{} }

// karpenter_nodepools_cost_total is the pool's launched claims at their offerings' prices: the claim's zone and
// capacity type pick the offering, a claim not launched or of a type the provider no longer lists adds nothing.
func TestCostIsTheLaunchedClaimsOfferings(t *testing.T) {
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	claim := func(name, it, zone, capacityType string, launched bool) *v1.NodeClaim {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "default",
			v1.LabelInstanceType: it, v1.LabelTopologyZone: zone, v1.CapacityTypeLabelKey: capacityType}}}
		if launched {
			nc.Status.ProviderID = "fake:///" + zone + "/" + name
		}
		return nc
	}
	kube := fake.NewClientBuilder().WithScheme(sch).WithObjects(
		&v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		claim("a", "m5.large", "us-east-1a", v1.CapacityTypeOnDemand, true),
		claim("b", "m5.large", "us-east-1b", v1.CapacityTypeSpot, true),
		claim("c", "m5.large", "us-east-1a", v1.CapacityTypeOnDemand, false),
		claim("d", "gone.large", "us-east-1a", v1.CapacityTypeOnDemand, true),
	).Build()
	cloud := fakecloud.New(&cloudprovider.InstanceType{Name: "m5.large", Offerings: cloudprovider.Offerings{
		{Zone: "us-east-1a", CapacityType: v1.CapacityTypeOnDemand, Price: 0.096, Available: true},
		{Zone: "us-east-1a", CapacityType: v1.CapacityTypeSpot, Price: 0.03, Available: true},
		{Zone: "us-east-1b", CapacityType: v1.CapacityTypeSpot, Price: 0.04, Available: false},
	}})
	reg := prometheus.NewRegistry()
	c := NewController(Deps{Client: kube, Cluster: syncedState{}, Registerer: reg, CloudProvider: cloud})
	if _, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := testutil.ToFloat64(c.metrics.cost.WithLabelValues("default")), 0.096+0.04; got != want {
		t.Errorf("cost = %v, want %v (a on-demand in a, b spot in b)", got, want)
	}
}
