package reservationdemotion_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/reservationdemotion"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

var env *environment.Environment

func TestMain(m *testing.M) {
	var err error
	env, err = environment.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// instances is what the cloud reports: capacity type by provider ID.
type instances map[string]string

func (in instances) List(context.Context) ([]*v1.NodeClaim, error) {
	var out []*v1.NodeClaim
	for id, capacityType := range in {
		out = append(out, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1.CapacityTypeLabelKey: capacityType}},
			Status: v1.NodeClaimStatus{ProviderID: id}})
	}
	return out, nil
}

func reservedLabels(id string) map[string]string {
	return map[string]string{v1.NodePoolLabelKey: "default", v1.CapacityTypeLabelKey: v1.CapacityTypeReserved,
		awsv1.LabelCapacityReservationID: id, awsv1.LabelCapacityReservationType: "default", awsv1.LabelCapacityReservationInterruptible: "false"}
}

// reservedClaimAndNode creates a reserved NodeClaim with the provider ID and its Node (registered or not).
func reservedClaimAndNode(t *testing.T, name, providerID string, registered bool) {
	t.Helper()
	ctx := context.Background()
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: reservedLabels("cr-1")},
		Spec: v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpExists}}},
	}
	if err := env.Client.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID = providerID
	if err := env.Client.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: reservedLabels("cr-1")}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	if registered {
		node.Labels[v1.NodeRegisteredLabelKey] = "true"
	}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, nc)
		_ = env.Client.Delete(ctx, node)
	})
}

func labelsOf(t *testing.T, obj client.Object) map[string]string {
	t.Helper()
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	return obj.GetLabels()
}

// TestInstancesOutOfTheirReservationAreRelabelledOnDemand: the claim whose instance now runs on-demand and
// its registered Node lose the reserved capacity type and the reservation labels; a claim still reserved,
// and the unregistered Node of a demoted claim, keep theirs.
func TestInstancesOutOfTheirReservationAreRelabelledOnDemand(t *testing.T) {
	reservedClaimAndNode(t, "left", "aws:///us-east-1a/i-left", true)
	reservedClaimAndNode(t, "stays", "aws:///us-east-1a/i-stays", true)
	reservedClaimAndNode(t, "joining", "aws:///us-east-1a/i-joining", false)
	cloud := instances{"aws:///us-east-1a/i-left": v1.CapacityTypeOnDemand, "aws:///us-east-1a/i-stays": v1.CapacityTypeReserved,
		"aws:///us-east-1a/i-joining": v1.CapacityTypeOnDemand}
	c := reservationdemotion.New(env.Client, cloud)
	res, err := c.Reconcile(context.Background(), reconcile.Request{})
	if err != nil || res.RequeueAfter != reservationdemotion.Interval {
		t.Fatalf("reconcile = %+v, %v; want a requeue after %v", res, err, reservationdemotion.Interval)
	}
	for _, obj := range []client.Object{&v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "left"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "left"}},
		&v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "joining"}}} {
		labels := labelsOf(t, obj)
		if labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeOnDemand || labels[awsv1.LabelCapacityReservationID] != "" ||
			labels[awsv1.LabelCapacityReservationType] != "" || labels[awsv1.LabelCapacityReservationInterruptible] != "" {
			t.Errorf("%T %s labels %v, want on-demand without reservation labels", obj, obj.GetName(), labels)
		}
		if labels[v1.NodePoolLabelKey] != "default" {
			t.Errorf("%T %s lost its other labels: %v", obj, obj.GetName(), labels)
		}
	}
	for _, obj := range []client.Object{&v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "stays"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "stays"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "joining"}}} {
		if labels := labelsOf(t, obj); labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeReserved || labels[awsv1.LabelCapacityReservationID] != "cr-1" {
			t.Errorf("%T %s labels %v, want still reserved", obj, obj.GetName(), labels)
		}
	}
}
