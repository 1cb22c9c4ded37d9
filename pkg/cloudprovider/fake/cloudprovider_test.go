package fake_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

func TestFakeLifecycle(t *testing.T) {
	ctx := context.Background()
	it := &cloudprovider.InstanceType{
		Name:         "m",
		Requirements: scheduling.FromLabels(map[string]string{v1.LabelInstanceType: "m"}),
		Offerings:    cloudprovider.Offerings{{Zone: "z", CapacityType: v1.CapacityTypeOnDemand, Price: 1, Available: true}},
		Capacity:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
	}
	cp := fake.New(it)
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}

	injected := errors.New("injected")
	cp.InjectError(fake.MethodCreate, injected)
	if _, err := cp.Create(ctx, claim); !errors.Is(err, injected) {
		t.Fatalf("first create: %v, want injected error", err)
	}
	created, err := cp.Create(ctx, claim)
	if err != nil {
		t.Fatalf("second create: %v", err)
	}
	if created.Labels[v1.LabelTopologyZone] != "z" || created.Status.ProviderID == "" {
		t.Errorf("created = %+v", created)
	}
	if got, _ := cp.List(ctx); len(got) != 1 {
		t.Errorf("list = %d instances", len(got))
	}
	if err := cp.Delete(ctx, created); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := cp.Delete(ctx, created); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("second delete = %v, want NodeClaimNotFound", err)
	}
	if cp.Calls(fake.MethodCreate) != 2 || len(cp.CreateCalls()) != 2 || len(cp.DeleteCalls()) != 2 {
		t.Errorf("calls not recorded")
	}
	cp.AllowedCreateCalls = 0
	if _, err := cp.Create(ctx, claim); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("capped create = %v, want InsufficientCapacity", err)
	}
	cp.Reset()
	if cp.Calls(fake.MethodCreate) != 0 {
		t.Errorf("reset kept calls")
	}
}

// TestFakeDeletesByNodeClaimName checks that Delete finds the instance launched for a NodeClaim whose
// status never recorded the launch (no provider ID), by the claim's name.
func TestFakeDeletesByNodeClaimName(t *testing.T) {
	ctx := context.Background()
	it := &cloudprovider.InstanceType{
		Name:         "m",
		Requirements: scheduling.FromLabels(map[string]string{v1.LabelInstanceType: "m"}),
		Offerings:    cloudprovider.Offerings{{Zone: "z", CapacityType: v1.CapacityTypeOnDemand, Price: 1, Available: true}},
		Capacity:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
	}
	cp := fake.New(it)
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	if _, err := cp.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if err := cp.Delete(ctx, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "other"}}); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("delete of another claim = %v, want NodeClaimNotFound", err)
	}
	if err := cp.Delete(ctx, claim); err != nil {
		t.Fatalf("delete by name: %v", err)
	}
	if got, _ := cp.List(ctx); len(got) != 0 {
		t.Errorf("%d instances left after delete by name", len(got))
	}
	if err := cp.Delete(ctx, claim); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("second delete = %v, want NodeClaimNotFound", err)
	}
}
