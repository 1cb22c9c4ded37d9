package static_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodepool/static"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/informed"
)

func instanceType(name string, cpu int64, price float64) *cloudprovider.InstanceType {
	reqs := scheduling.FromLabels(map[string]string{v1.LabelInstanceType: name, v1.LabelArch: "amd64", v1.LabelOS: "linux"})
	reqs.Add(scheduling.MustRequirement(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a"))
	reqs.Add(scheduling.MustRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand))
	return &cloudprovider.InstanceType{Name: name, Requirements: reqs,
		Offerings: cloudprovider.Offerings{{Zone: "zone-a", CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true}},
		Capacity:  corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI), corev1.ResourcePods: resource.MustParse("110")}}
}

// A static pool gets its replicas as NodeClaims of its cheapest type, no more than limits.nodes, and loses
// the extra ones when scaled down.
func TestStaticPoolKeepsItsReplicas(t *testing.T) {
	env, err := environment.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	view, err := informed.Start(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Stop()
	ctx := context.Background()
	c := static.NewController(static.Deps{Client: view.Client, Cluster: view.State,
		CloudProvider: fake.New(instanceType("big", 8, 0.4), instanceType("small", 2, 0.1)), Clock: clocktesting.NewFakeClock(time.Now())})

	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "static"}, Spec: v1.NodePoolSpec{
		Replicas: ptr.To[int64](3),
		Limits:   v1.Limits{"nodes": resource.MustParse("2")},
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}}},
	}}
	if err := env.Client.Create(ctx, pool); err != nil {
		t.Fatalf("creating a static pool: %v", err)
	}
	// Claims are created with the termination finalizer and no termination controller runs here: a claim the
	// pool let go stays, being deleted.
	reconcileUntil := func(what string, want int) []v1.NodeClaim {
		t.Helper()
		var live []v1.NodeClaim
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			if err := view.Client.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
				return false, err
			}
			if _, err := c.Reconcile(ctx, pool); err != nil {
				return false, err
			}
			var claims v1.NodeClaimList
			if err := view.Client.List(ctx, &claims); err != nil {
				return false, err
			}
			live = slices.DeleteFunc(claims.Items, func(c v1.NodeClaim) bool { return c.DeletionTimestamp != nil })
			return len(live) == want, nil
		})
		if err != nil {
			t.Fatalf("%s: have %d claims, want %d: %v", what, len(live), want, err)
		}
		return live
	}
	claims := reconcileUntil("launching within limits.nodes", 2)
	for _, cl := range claims {
		if cl.Labels[v1.NodePoolLabelKey] != "static" || fmt.Sprint(instanceTypesOf(cl)) != "[big small]" {
			t.Errorf("claim %s: labels %v, instance types %v", cl.Name, cl.Labels, instanceTypesOf(cl))
		}
	}
	// Still 2 after more passes: the limit holds and nothing is launched twice.
	for range 3 {
		if _, err := c.Reconcile(ctx, pool); err != nil {
			t.Fatal(err)
		}
	}
	if claims := reconcileUntil("staying at the limit", 2); len(claims) != 2 {
		t.Fatal(claims)
	}

	pool.Spec.Replicas = ptr.To[int64](1)
	if err := env.Client.Update(ctx, pool); err != nil {
		t.Fatal(err)
	}
	reconcileUntil("scaling down to 1", 1)
}

func instanceTypesOf(c v1.NodeClaim) []string {
	for _, r := range c.Spec.Requirements {
		if r.Key == v1.LabelInstanceType {
			return r.Values
		}
	}
	return nil
}
