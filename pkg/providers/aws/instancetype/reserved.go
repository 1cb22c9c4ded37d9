package instancetype

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// ReservationCounts says how many more instances a capacity reservation can take (package
// capacityreservation's Provider).
type ReservationCounts interface {
	AvailableInstanceCount(id string) (int, bool)
}

// ReservedPriceDivisor makes a reserved offering nearly free (the instance is paid for either way) while
// keeping the types' relative order, as Karpenter prices them: the on-demand price divided by ten million.
const ReservedPriceDivisor = 10_000_000.0

// WithReservedOfferings returns the types with a reserved offering for each capacity reservation in the
// node class's status that is for the type: in the reservation's zone, priced by ReservedPriceDivisor,
// available while the reservation has room, is not expiring and its zone is one the type is offered in.
// The offering carries the reservation's id, type and interruptible labels, and the type's requirements
// add capacity type reserved and those labels. Types without reservations are returned as they are; the
// others are copies (the input is not modified).
func WithReservedOfferings(its cloudprovider.InstanceTypes, nodeClass *awsv1.EC2NodeClass, counts ReservationCounts) cloudprovider.InstanceTypes {
	if nodeClass == nil || len(nodeClass.Status.CapacityReservations) == 0 {
		return its
	}
	byType := map[string][]awsv1.CapacityReservation{}
	for _, cr := range nodeClass.Status.CapacityReservations {
		byType[cr.InstanceType] = append(byType[cr.InstanceType], cr)
	}
	out := make(cloudprovider.InstanceTypes, 0, len(its))
	for _, it := range its {
		crs, ok := byType[it.Name]
		if !ok {
			out = append(out, it)
			continue
		}
		out = append(out, withReservations(it, crs, counts))
	}
	return out
}

func withReservations(it *cloudprovider.InstanceType, crs []awsv1.CapacityReservation, counts ReservationCounts) *cloudprovider.InstanceType {
	zones := it.Offerings.Zones()
	odPrice := 0.0
	for _, o := range it.Offerings {
		if o.CapacityType == v1.CapacityTypeOnDemand {
			odPrice = o.Price
			break
		}
	}
	c := *it
	c.Offerings = slices.Clone(it.Offerings)
	var ids, types, interruptible []string
	for _, cr := range crs {
		n, _ := counts.AvailableInstanceCount(cr.ID)
		crType := cr.ReservationType
		if crType == "" {
			crType = "default"
		}
		labels := map[string]string{
			awsv1.LabelCapacityReservationID:            cr.ID,
			awsv1.LabelCapacityReservationType:          crType,
			awsv1.LabelCapacityReservationInterruptible: strconv.FormatBool(cr.Interruptible),
		}
		c.Offerings = append(c.Offerings, cloudprovider.Offering{
			Zone: cr.AvailabilityZone, CapacityType: v1.CapacityTypeReserved, Price: odPrice / ReservedPriceDivisor,
			Available:   n > 0 && cr.State != "expiring" && slices.Contains(zones, cr.AvailabilityZone),
			Reservation: &cloudprovider.Reservation{ID: cr.ID, Capacity: max(n, 0), Labels: labels},
		})
		ids = append(ids, cr.ID)
		types = append(types, crType)
		interruptible = append(interruptible, labels[awsv1.LabelCapacityReservationInterruptible])
	}
	c.Requirements = it.Requirements.Clone()
	capacityTypes := append(slices.Clone(it.Requirements.Get(v1.CapacityTypeLabelKey).Values()), v1.CapacityTypeReserved)
	c.Requirements[v1.CapacityTypeLabelKey] = scheduling.MustRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacityTypes...)
	c.Requirements[awsv1.LabelCapacityReservationID] = scheduling.MustRequirement(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpIn, ids...)
	c.Requirements[awsv1.LabelCapacityReservationType] = scheduling.MustRequirement(awsv1.LabelCapacityReservationType, corev1.NodeSelectorOpIn, types...)
	c.Requirements[awsv1.LabelCapacityReservationInterruptible] = scheduling.MustRequirement(awsv1.LabelCapacityReservationInterruptible, corev1.NodeSelectorOpIn, interruptible...)
	return &c
}
