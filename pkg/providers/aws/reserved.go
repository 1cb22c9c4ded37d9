package aws

import (
	"cmp"
	"context"
	"slices"
	"strconv"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instance"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instancetype"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/launchtemplate"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/unavailable"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// Reservations is what the provider knows of capacity reservations' room (package capacityreservation's
// Provider): how many more instances each takes, less Lathe's launches since EC2 last said, zero after a
// launch found it full.
type Reservations interface {
	instancetype.ReservationCounts
	MarkLaunched(id string)
	MarkUnavailable(ids ...string)
}

// reservedTypes adds the node class's reserved offerings to another source's types (the ReservedCapacity
// feature gate). A reserved offering a launch recently found full (in the unavailable-offerings cache under
// capacity type reserved) is unavailable.
type reservedTypes struct {
	InstanceTypeSource
	reservations Reservations
	unavailable  *unavailable.Offerings
}

func (r reservedTypes) List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (cloudprovider.InstanceTypes, error) {
	its, err := r.InstanceTypeSource.List(ctx, nodeClass)
	if err != nil {
		return nil, err
	}
	its = instancetype.WithReservedOfferings(its, nodeClass, r.reservations)
	for _, it := range its {
		for i := range it.Offerings {
			o := &it.Offerings[i]
			if o.CapacityType == v1.CapacityTypeReserved && o.Available && r.unavailable.IsUnavailable(it.Name, o.Zone, o.CapacityType) {
				o.Available = false
			}
		}
	}
	return its, nil
}

// reservedOfferings are the candidates' reserved offerings a launch targets: those of the cheapest
// offering's reservation kind (one fleet launches into one kind), one reservation per type and zone (the one
// with the most room).
func reservedOfferings(its cloudprovider.InstanceTypes, reqs scheduling.Requirements) (instance.ReservationKind, map[string]cloudprovider.Offering) {
	type pick struct {
		it string
		o  cloudprovider.Offering
	}
	var all []pick
	for _, it := range its {
		for _, o := range it.Offerings.Available().Compatible(reqs) {
			if o.CapacityType == v1.CapacityTypeReserved && o.Reservation != nil {
				all = append(all, pick{it.Name, o})
			}
		}
	}
	if len(all) == 0 {
		return instance.ReservationKind{}, nil
	}
	slices.SortStableFunc(all, func(a, b pick) int {
		if a.o.Price != b.o.Price {
			return cmp.Compare(a.o.Price, b.o.Price)
		}
		return b.o.Reservation.Capacity - a.o.Reservation.Capacity
	})
	kind := kindOf(all[0].o)
	out := map[string]cloudprovider.Offering{}
	for _, p := range all {
		key := p.it + "/" + p.o.Zone
		if _, ok := out[key]; ok || kindOf(p.o) != kind {
			continue
		}
		out[key] = p.o
	}
	return kind, out
}

func kindOf(o cloudprovider.Offering) instance.ReservationKind {
	if o.Reservation == nil {
		return instance.ReservationKind{}
	}
	return instance.ReservationKind{Type: o.Reservation.Labels[awsv1.LabelCapacityReservationType],
		Interruptible: o.Reservation.Labels[awsv1.LabelCapacityReservationInterruptible] == "true"}
}

func templateReservation(o cloudprovider.Offering) *launchtemplate.Reservation {
	k := kindOf(o)
	return &launchtemplate.Reservation{ID: o.ReservationID(), Type: k.Type, Interruptible: k.Interruptible}
}

// reservationLabels are the labels of a node in the reservation: its id, type and interruptible, from the
// node class's status (the id alone when the status no longer lists it).
func reservationLabels(nodeClass *awsv1.EC2NodeClass, id string) map[string]string {
	out := map[string]string{awsv1.LabelCapacityReservationID: id}
	if nodeClass == nil {
		return out
	}
	for _, cr := range nodeClass.Status.CapacityReservations {
		if cr.ID != id {
			continue
		}
		out[awsv1.LabelCapacityReservationType] = cr.ReservationType
		if cr.ReservationType == "" {
			out[awsv1.LabelCapacityReservationType] = "default"
		}
		out[awsv1.LabelCapacityReservationInterruptible] = strconv.FormatBool(cr.Interruptible)
	}
	return out
}

// reservationLabelKeys are the labels only a node in a capacity reservation has.
var reservationLabelKeys = []string{awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType, awsv1.LabelCapacityReservationInterruptible}

// withoutReserved narrows the requirements to the capacity types other than reserved they allow, and
// reports whether any is left (a reserved launch that found its reservations full falls back to them).
func withoutReserved(reqs scheduling.Requirements) (scheduling.Requirements, bool) {
	var rest []string
	for _, ct := range []string{v1.CapacityTypeOnDemand, v1.CapacityTypeSpot} {
		if r, ok := reqs[v1.CapacityTypeLabelKey]; !ok || r.Has(ct) {
			rest = append(rest, ct)
		}
	}
	if len(rest) == 0 {
		return reqs, false
	}
	out := reqs.Clone()
	out[v1.CapacityTypeLabelKey] = scheduling.MustRequirement(v1.CapacityTypeLabelKey, "In", rest...)
	return out, true
}
