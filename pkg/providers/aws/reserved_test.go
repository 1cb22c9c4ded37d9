package aws_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/capacityreservation"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
)

// reservedHarness is a harness whose provider launches into capacity reservations (the ReservedCapacity
// gate on), with a reservation of the fake resolved into the node class's status as the node class
// controller would.
func reservedHarness(t *testing.T, name string, cr fakeaws.CapacityReservation) (*harness, *awsv1.EC2NodeClass, *capacityreservation.Provider) {
	t.Helper()
	var reservations *capacityreservation.Provider
	h := newHarness(t, func(d *aws.Deps) {
		reservations = capacityreservation.NewProvider(d.EC2.(*ec2.Client), d.Clock)
		d.Reservations = reservations
	})
	stored := h.fake.AddCapacityReservation(cr)
	found, err := reservations.List(context.Background(), []awsv1.CapacityReservationSelectorTerm{{ID: stored.ID}})
	if err != nil || len(found) != 1 {
		t.Fatalf("listing the reservation: %v, %v", found, err)
	}
	status, err := capacityreservation.Status(found[0], h.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	nc := nodeClass(t, name, func(nc *awsv1.EC2NodeClass) {
		nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: stored.ID}}
		nc.Status.CapacityReservations = []awsv1.CapacityReservation{status}
	})
	return h, nc, reservations
}

// reservedOrOnDemand is a NodeClaim for m5.large or m5.xlarge that allows reserved and on-demand.
func reservedOrOnDemand(nodeClassName string) *v1.NodeClaim {
	claim := nodeClaim(nodeClassName, v1.CapacityTypeReserved, "m5.large", "m5.xlarge")
	claim.Spec.Requirements[1].Values = []string{v1.CapacityTypeReserved, v1.CapacityTypeOnDemand}
	return claim
}

func TestThreeClaimsIntoATwoSlotReservation(t *testing.T) {
	h, nc, reservations := reservedHarness(t, "reserved-three", fakeaws.CapacityReservation{
		InstanceType: "m5.large", Zone: "us-east-1a", Total: 2, Available: 2, InstanceMatchCriteria: "targeted"})
	id := nc.Status.CapacityReservations[0].ID
	ctx := context.Background()
	var got []*v1.NodeClaim
	for range 3 {
		claim, err := h.provider.Create(ctx, reservedOrOnDemand(nc.Name))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, claim)
	}
	for i, claim := range got[:2] {
		if claim.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeReserved || claim.Labels[awsv1.LabelCapacityReservationID] != id ||
			claim.Labels[awsv1.LabelCapacityReservationType] != "default" || claim.Labels[awsv1.LabelCapacityReservationInterruptible] != "false" ||
			claim.Labels[v1.LabelTopologyZone] != "us-east-1a" || claim.Labels[v1.LabelInstanceType] != "m5.large" {
			t.Errorf("claim %d labels = %v, want reserved in %s", i, claim.Labels, id)
		}
	}
	if l := got[2].Labels; l[v1.CapacityTypeLabelKey] != v1.CapacityTypeOnDemand || l[awsv1.LabelCapacityReservationID] != "" {
		t.Errorf("third claim labels = %v, want on-demand outside the reservation", l)
	}
	inReservation := 0
	for _, in := range h.live() {
		if in.CapacityReservationID == id {
			inReservation++
			lt, _ := h.fake.LaunchTemplate(in.LaunchTemplate)
			if lt.Reservation.TargetID != id {
				t.Errorf("instance %s launched from template %+v, want it targeting %s", in.ID, lt.Reservation, id)
			}
		}
	}
	if cr, _ := h.fake.CapacityReservation(id); inReservation != 2 || cr.Available != 0 {
		t.Fatalf("%d instances in the reservation, %d slots left; want 2 and 0", inReservation, cr.Available)
	}
	if n, _ := reservations.AvailableInstanceCount(id); n != 0 {
		t.Errorf("the provider counts %d slots left, want 0", n)
	}
	// The on-demand launch's template opts out of open reservations.
	for _, in := range h.live() {
		if in.CapacityReservationID == "" {
			if lt, _ := h.fake.LaunchTemplate(in.LaunchTemplate); lt.Reservation.Preference != "none" {
				t.Errorf("on-demand template reservation spec = %+v, want preference none", lt.Reservation)
			}
		}
	}
	// Get reads the reservation back from EC2.
	back, err := h.provider.Get(ctx, got[0].Status.ProviderID)
	if err != nil || back.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeReserved || back.Labels[awsv1.LabelCapacityReservationID] != id {
		t.Fatalf("Get = %v, %v", back, err)
	}
}

func TestFullReservationFallsBackAndIsMarkedUnavailable(t *testing.T) {
	h, nc, reservations := reservedHarness(t, "reserved-full", fakeaws.CapacityReservation{
		InstanceType: "m5.large", Zone: "us-east-1a", Total: 2, Available: 2})
	cr := nc.Status.CapacityReservations[0]
	// Someone else fills the reservation; the provider still counts two slots.
	stored, _ := h.fake.CapacityReservation(cr.ID)
	stored.Available = 0
	h.fake.AddCapacityReservation(stored)
	ctx := context.Background()
	claim, err := h.provider.Create(ctx, reservedOrOnDemand(nc.Name))
	if err != nil {
		t.Fatal(err)
	}
	if claim.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeOnDemand {
		t.Fatalf("labels = %v, want the on-demand fallback", claim.Labels)
	}
	if n, _ := reservations.AvailableInstanceCount(cr.ID); n != 0 {
		t.Errorf("the provider counts %d slots left, want 0 after ReservationCapacityExceeded", n)
	}
	// A claim that allows only reserved gets InsufficientCapacity.
	_, err = h.provider.Create(ctx, nodeClaim(nc.Name, v1.CapacityTypeReserved, "m5.large"))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("reserved-only Create = %v, want InsufficientCapacity", err)
	}
	// The reserved offering is unavailable in the instance types.
	its, err := h.provider.GetInstanceTypes(ctx, nodePool(nc.Name))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		for _, o := range it.Offerings.Reserved() {
			if o.Available {
				t.Errorf("%s reserved offering %+v is available", it.Name, o)
			}
		}
	}
}

func TestCapacityBlockLaunchesWithItsMarketType(t *testing.T) {
	end := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	h, nc, _ := reservedHarness(t, "reserved-block", fakeaws.CapacityReservation{
		InstanceType: "m5.large", Zone: "us-east-1b", Total: 1, Available: 1, ReservationType: "capacity-block", EndDate: &end,
		InstanceMatchCriteria: "targeted"})
	claim, err := h.provider.Create(context.Background(), nodeClaim(nc.Name, v1.CapacityTypeReserved, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if claim.Labels[awsv1.LabelCapacityReservationType] != "capacity-block" || claim.Labels[v1.LabelTopologyZone] != "us-east-1b" {
		t.Fatalf("labels = %v", claim.Labels)
	}
	live := h.live()
	if len(live) != 1 {
		t.Fatalf("instances = %d", len(live))
	}
	lt, _ := h.fake.LaunchTemplate(live[0].LaunchTemplate)
	if lt.Reservation.MarketType != "capacity-block" || lt.Reservation.Preference != "capacity-reservations-only" || live[0].CapacityType != "capacity-block" {
		t.Fatalf("template %+v, instance %+v", lt.Reservation, live[0])
	}
}

// nodePool is a NodePool of the node class.
func nodePool(nodeClassName string) *v1.NodePool {
	np := &v1.NodePool{}
	np.Name = "default"
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nodeClassName}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	return np
}

func TestInterruptibleReservationLaunchesAsReservedCapacity(t *testing.T) {
	h, nc, _ := reservedHarness(t, "reserved-interruptible", fakeaws.CapacityReservation{
		InstanceType: "m5.large", Zone: "us-east-1a", Total: 1, Available: 1, Interruptible: true, InstanceMatchCriteria: "targeted"})
	claim, err := h.provider.Create(context.Background(), nodeClaim(nc.Name, v1.CapacityTypeReserved, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if claim.Labels[awsv1.LabelCapacityReservationInterruptible] != "true" {
		t.Fatalf("labels = %v", claim.Labels)
	}
	live := h.live()
	if len(live) != 1 {
		t.Fatalf("instances = %d", len(live))
	}
	lt, _ := h.fake.LaunchTemplate(live[0].LaunchTemplate)
	if lt.Reservation.MarketType != "interruptible-capacity-reservation" || live[0].CapacityType != "reserved-capacity" {
		t.Fatalf("template %+v, instance %+v", lt.Reservation, live[0])
	}
}
