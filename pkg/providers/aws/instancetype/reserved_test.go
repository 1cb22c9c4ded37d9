package instancetype_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instancetype"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

type counts map[string]int

func (c counts) AvailableInstanceCount(id string) (int, bool) { n, ok := c[id]; return n, ok }

func m5Large() *cloudprovider.InstanceType {
	reqs := scheduling.FromLabels(map[string]string{v1.LabelInstanceType: "m5.large"})
	reqs.Add(scheduling.MustRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand, v1.CapacityTypeSpot))
	reqs.Add(scheduling.MustRequirement(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpDoesNotExist))
	return &cloudprovider.InstanceType{Name: "m5.large", Requirements: reqs, Offerings: cloudprovider.Offerings{
		{Zone: "us-east-1a", CapacityType: v1.CapacityTypeOnDemand, Price: 0.096, Available: true},
		{Zone: "us-east-1b", CapacityType: v1.CapacityTypeOnDemand, Price: 0.096, Available: true},
		{Zone: "us-east-1a", CapacityType: v1.CapacityTypeSpot, Price: 0.04, Available: true},
	}}
}

func TestReservedOfferingsFollowTheNodeClassReservations(t *testing.T) {
	nc := &awsv1.EC2NodeClass{}
	nc.Status.CapacityReservations = []awsv1.CapacityReservation{
		{ID: "cr-open", InstanceType: "m5.large", AvailabilityZone: "us-east-1a", ReservationType: "default", State: "active"},
		{ID: "cr-block", InstanceType: "m5.large", AvailabilityZone: "us-east-1b", ReservationType: "capacity-block", State: "active"},
		{ID: "cr-expiring", InstanceType: "m5.large", AvailabilityZone: "us-east-1a", ReservationType: "capacity-block", State: "expiring"},
		{ID: "cr-full", InstanceType: "m5.large", AvailabilityZone: "us-east-1a", ReservationType: "default", State: "active", Interruptible: true},
		{ID: "cr-elsewhere", InstanceType: "m5.large", AvailabilityZone: "us-east-1c", ReservationType: "default", State: "active"},
		{ID: "cr-other-type", InstanceType: "c5.large", AvailabilityZone: "us-east-1a", ReservationType: "default", State: "active"},
	}
	in := cloudprovider.InstanceTypes{m5Large()}
	out := instancetype.WithReservedOfferings(in, nc, counts{"cr-open": 3, "cr-block": 1, "cr-expiring": 2, "cr-full": 0, "cr-elsewhere": 5})
	if len(in[0].Offerings) != 3 {
		t.Fatalf("the input was modified: %d offerings", len(in[0].Offerings))
	}
	reserved := out[0].Offerings.Reserved()
	want := map[string]struct {
		zone, crType, interruptible string
		capacity                    int
		available                   bool
	}{
		"cr-open":      {"us-east-1a", "default", "false", 3, true},
		"cr-block":     {"us-east-1b", "capacity-block", "false", 1, true},
		"cr-expiring":  {"us-east-1a", "capacity-block", "false", 2, false},
		"cr-full":      {"us-east-1a", "default", "true", 0, false},
		"cr-elsewhere": {"us-east-1c", "default", "false", 5, false}, // the type isn't offered in us-east-1c
	}
	if len(reserved) != len(want) {
		t.Fatalf("reserved offerings %+v, want %d", reserved, len(want))
	}
	for _, o := range reserved {
		w, ok := want[o.ReservationID()]
		if !ok || o.Zone != w.zone || o.Reservation.Capacity != w.capacity || o.Available != w.available ||
			o.Reservation.Labels[awsv1.LabelCapacityReservationType] != w.crType ||
			o.Reservation.Labels[awsv1.LabelCapacityReservationInterruptible] != w.interruptible ||
			o.Reservation.Labels[awsv1.LabelCapacityReservationID] != o.ReservationID() {
			t.Errorf("offering %+v (%+v), want %+v", o, o.Reservation, w)
		}
		if o.Price != 0.096/instancetype.ReservedPriceDivisor {
			t.Errorf("%s price %v, want the on-demand price / 10,000,000", o.ReservationID(), o.Price)
		}
	}
	reqs := out[0].Requirements
	if !reqs.Get(v1.CapacityTypeLabelKey).Has(v1.CapacityTypeReserved) || !reqs.Get(awsv1.LabelCapacityReservationID).Has("cr-open") ||
		reqs.Get(awsv1.LabelCapacityReservationID).Has("cr-other-type") || !reqs.Get(awsv1.LabelCapacityReservationType).Has("capacity-block") {
		t.Errorf("requirements %v", reqs)
	}
	// A NodeClaim narrowed to one reservation is compatible with its offering only.
	claim := scheduling.NewRequirements(scheduling.MustRequirement(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpIn, "cr-open"),
		scheduling.MustRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved))
	if got := out[0].Offerings.Available().Compatible(claim); len(got) != 1 || got[0].ReservationID() != "cr-open" {
		t.Errorf("offerings for the claim %+v", got)
	}
	if got := cloudprovider.InstanceTypes(out).Compatible(claim); len(got) != 1 {
		t.Errorf("the type isn't compatible with a claim for its reservation")
	}
}

func TestNoReservationsLeaveTheTypesAlone(t *testing.T) {
	in := cloudprovider.InstanceTypes{m5Large()}
	out := instancetype.WithReservedOfferings(in, &awsv1.EC2NodeClass{}, counts{})
	if out[0] != in[0] || out[0].Requirements.Get(v1.CapacityTypeLabelKey).Has(v1.CapacityTypeReserved) {
		t.Fatalf("types changed without reservations")
	}
}
