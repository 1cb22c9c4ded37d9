package launchtemplate

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Reservation is the capacity reservation a template's launches target.
type Reservation struct {
	ID string
	// Type is "default" (an on-demand capacity reservation) or "capacity-block".
	Type          string
	Interruptible bool
}

// withReservation sets the template's capacity reservation specification as Karpenter does with the
// ReservedCapacity gate on: a reserved launch targets its reservation only (capacity blocks and
// interruptible reservations with their market type); any other launch opts out of open reservations, so
// that reservations are used only through reserved offerings. Without the gate the template says nothing.
func withReservation(data *ec2types.RequestLaunchTemplateData, in Input) {
	switch {
	case in.CapacityReservation != nil:
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
			CapacityReservationTarget:     &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(in.CapacityReservation.ID)},
		}
		switch {
		case in.CapacityReservation.Type == "capacity-block":
			data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
		case in.CapacityReservation.Interruptible:
			data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeInterruptibleCapacityReservation}
		}
	case in.OptOutOfOpenReservations:
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceNone,
		}
	}
}
