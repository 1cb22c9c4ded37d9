package reservationexpiry_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/capacityreservation"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/reservationexpiry"
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

// claim creates a NodeClaim of the node class group in the reservation ("" for none), held by a finalizer
// so that its deletion shows.
func claim(t *testing.T, name, group, reservationID string) *v1.NodeClaim {
	t.Helper()
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "default"}, Finalizers: []string{v1.TerminationFinalizer}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: &v1.NodeClassReference{Group: group, Kind: "EC2NodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpExists}},
		},
	}
	if reservationID != "" {
		nc.Labels[awsv1.LabelCapacityReservationID] = reservationID
		nc.Labels[v1.CapacityTypeLabelKey] = v1.CapacityTypeReserved
	}
	ctx := context.Background()
	if err := env.Client.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stored := &v1.NodeClaim{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), stored); err != nil {
			return
		}
		stored.Finalizers = nil
		_ = env.Client.Update(ctx, stored)
		_ = env.Client.Delete(ctx, stored)
	})
	return nc
}

func deleting(t *testing.T, nc *v1.NodeClaim) bool {
	t.Helper()
	stored := &v1.NodeClaim{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(nc), stored); err != nil {
		t.Fatal(err)
	}
	return !stored.DeletionTimestamp.IsZero()
}

// TestNodeClaimsLeaveACapacityBlockFortyMinutesBeforeItsEnd: of the AWS provider's NodeClaims, those in a
// capacity block are deleted once the block is within 40 minutes of its end; those in a block that ends
// later, in an ordinary reservation (even one with an end date), outside reservations, or of another
// provider are left alone.
func TestNodeClaimsLeaveACapacityBlockFortyMinutesBeforeItsEnd(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	fake := fakeaws.New(fakeaws.Options{}).Start()
	t.Cleanup(fake.Close)
	soon, later := start.Add(2*time.Hour), start.Add(10*time.Hour)
	block := fake.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "p5.48xlarge", Zone: "us-east-1a", Total: 2, Available: 0,
		InstanceMatchCriteria: "targeted", ReservationType: "capacity-block", StartDate: start, EndDate: &soon})
	laterBlock := fake.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "p5.48xlarge", Zone: "us-east-1a", Total: 1, Available: 0,
		InstanceMatchCriteria: "targeted", ReservationType: "capacity-block", StartDate: start, EndDate: &later})
	ordinary := fake.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1a", Total: 1, Available: 0,
		InstanceMatchCriteria: "targeted", EndDate: &soon})

	inBlock := []*v1.NodeClaim{claim(t, "block-a", awsv1.Group, block.ID), claim(t, "block-b", awsv1.Group, block.ID)}
	kept := []*v1.NodeClaim{
		claim(t, "later-block", awsv1.Group, laterBlock.ID),
		claim(t, "ordinary", awsv1.Group, ordinary.ID),
		claim(t, "on-demand", awsv1.Group, ""),
		claim(t, "other-provider", "karpenter.kwok.sh", block.ID),
	}
	controller := reservationexpiry.New(env.Client, capacityreservation.NewProvider(ec2.NewFromConfig(fake.AWSConfig()), clk), clk)
	reconcileAt := func(at time.Time) {
		t.Helper()
		clk.SetTime(at)
		result, err := controller.Reconcile(context.Background(), reconcile.Request{})
		if err != nil || result.RequeueAfter != reservationexpiry.Interval {
			t.Fatalf("reconcile at %s: %+v, %v", at, result, err)
		}
	}
	reconcileAt(start)
	reconcileAt(soon.Add(-41 * time.Minute))
	for _, nc := range append(inBlock, kept...) {
		if deleting(t, nc) {
			t.Fatalf("nodeclaim %s deleted 41 minutes before the block's end", nc.Name)
		}
	}
	reconcileAt(soon.Add(-40 * time.Minute))
	for _, nc := range inBlock {
		if !deleting(t, nc) {
			t.Errorf("nodeclaim %s in the expiring block is not being deleted", nc.Name)
		}
	}
	for _, nc := range kept {
		if deleting(t, nc) {
			t.Errorf("nodeclaim %s is being deleted, want it kept", nc.Name)
		}
	}
}
