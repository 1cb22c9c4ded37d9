package instance

import (
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

const (
	// capacityTypeReserved is Karpenter's capacity type of instances in capacity reservations.
	capacityTypeReserved = "reserved"
	// reservationFullCode is the fleet error of a reservation without room; like insufficient capacity, it
	// puts the offering (under capacity type reserved) into the unavailable-offerings cache.
	reservationFullCode = "ReservationCapacityExceeded"
)

// ReservationKind is what a reserved launch's reservations are: their type ("default" or
// "capacity-block") and whether they are interruptible. One fleet launches into one kind.
type ReservationKind struct {
	Type          string `json:",omitempty"`
	Interruptible bool   `json:",omitempty"`
}

// reservedFleet makes a fleet launch into the capacity reservations its launch templates target, as
// Karpenter does: the target capacity is on-demand (lowest-price) for an on-demand capacity reservation,
// capacity-block for a capacity block, reserved-capacity for an interruptible reservation.
func reservedFleet(in *ec2.CreateFleetInput, kind ReservationKind) {
	in.SpotOptions, in.OnDemandOptions = nil, nil
	switch {
	case kind.Type == "capacity-block":
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeCapacityBlock
	case kind.Interruptible:
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeReservedCapacity
		in.ReservedCapacityOptions = &ec2types.ReservedCapacityOptionsRequest{
			ReservationTypes: []ec2types.FleetReservationType{ec2types.FleetReservationTypeInterruptibleCapacityReservation},
		}
	default:
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeOnDemand
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
}

// withReservations records on each launched instance the reservation of the override it launched from
// (EC2's answer names the override's type and zone; a launch targets one reservation per type and zone).
func withReservations(instances []*Instance, overrides []Override) {
	for _, in := range instances {
		if in.CapacityType != capacityTypeReserved {
			continue
		}
		for _, o := range overrides {
			if o.ReservationID != "" && o.InstanceType == in.InstanceType && o.Zone == in.Zone {
				in.CapacityReservationID = o.ReservationID
				break
			}
		}
	}
}
