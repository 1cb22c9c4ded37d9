package aws_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
)

// TestCapacityReservationInterruptionLeavesTheReservationNoRoom: EC2 warns that it is reclaiming the
// capacity reservation of one of two instances launched into a three-slot reservation. Receiving the
// warning leaves the reservation no room (as Karpenter marks it unavailable): its offering is unavailable
// and the next claim that allows on-demand launches on-demand instead of into the reservation's last slot.
func TestCapacityReservationInterruptionLeavesTheReservationNoRoom(t *testing.T) {
	h, nc, reservations := reservedHarness(t, "reserved-interrupted", fakeaws.CapacityReservation{
		InstanceType: "m5.large", Zone: "us-east-1a", Total: 3, Available: 3, InstanceMatchCriteria: "targeted"})
	h.provider = h.newProvider(t, func(d *aws.Deps) {
		d.Reservations = reservations
		d.InterruptionQueue, d.SQS, d.InterruptionWait = clusterName, sqs.NewFromConfig(h.fake.AWSConfig()), -1
	})
	h.fake.CreateQueue(clusterName)
	id := nc.Status.CapacityReservations[0].ID
	ctx := context.Background()
	var launched []*v1.NodeClaim
	for range 2 {
		claim, err := h.provider.Create(ctx, reservedOrOnDemand(nc.Name))
		if err != nil || claim.Labels[awsv1.LabelCapacityReservationID] != id {
			t.Fatalf("launched %v, %v; want a claim in %s", claim, err, id)
		}
		launched = append(launched, claim)
	}
	if n, _ := reservations.AvailableInstanceCount(id); n != 1 {
		t.Fatalf("the provider counts %d slots left before the warning, want 1", n)
	}
	victim := launched[0].Status.ProviderID
	if err := h.fake.RaiseCapacityReservationInterruption(victim[len("aws:///us-east-1a/"):]); err != nil {
		t.Fatal(err)
	}
	got, err := h.provider.InterruptionQueue().ReceiveInterruptions(ctx)
	if err != nil || len(got) != 1 || got[0].Kind != cloudprovider.InterruptionCapacityReservation || got[0].ProviderID != victim {
		t.Fatalf("received %+v, %v; want a capacity reservation interruption of %s", got, err, victim)
	}
	if n, _ := reservations.AvailableInstanceCount(id); n != 0 {
		t.Errorf("the provider counts %d slots left after the warning, want 0", n)
	}
	its, err := h.provider.GetInstanceTypes(ctx, nodePool(nc.Name))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		for _, o := range it.Offerings.Reserved() {
			if o.Available {
				t.Errorf("%s reserved offering in %s is available after its reservation was interrupted", it.Name, o.ReservationID())
			}
		}
	}
	next, err := h.provider.Create(ctx, reservedOrOnDemand(nc.Name))
	if err != nil || next.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeOnDemand {
		t.Fatalf("the next launch: %v, %v; want on-demand outside the interrupted reservation", next.Labels, err)
	}
}
