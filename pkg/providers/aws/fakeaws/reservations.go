package fakeaws

import (
	"fmt"
	"slices"
)

// templateReservation is what a launch template says about capacity reservations.
type templateReservation struct {
	// Preference is the CapacityReservationPreference (open, none or capacity-reservations-only; "" unset).
	Preference string
	// TargetID is the CapacityReservationTarget's reservation ("" for none).
	TargetID string
	// MarketType is the InstanceMarketOptions' market type (capacity-block, interruptible-capacity-reservation,
	// spot; "" unset).
	MarketType string
}

func parseTemplateReservation(q query) templateReservation {
	return templateReservation{
		Preference: q["CapacityReservationSpecification.CapacityReservationPreference"],
		TargetID:   q["CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"],
		MarketType: q["InstanceMarketOptions.MarketType"],
	}
}

// targetCapacityTypes are the fleet's DefaultTargetCapacityTypes the fake serves.
var targetCapacityTypes = map[string]bool{"spot": true, "on-demand": true, "capacity-block": true, "reserved-capacity": true}

// reservationError is why an override whose launch template targets a capacity reservation can't launch n
// instances into it ("", "" when it can): the reservation must exist, be active, be for the override's
// type and zone, be of the kind the fleet asks for (a capacity block for capacity-block, with the
// capacity-block market type) and have n instances of room. The caller holds the state.
func (st *state) reservationError(o *fleetOverride, capacityType string, n int) (code, message string) {
	target := o.template.data.Reservation.TargetID
	if target == "" {
		if capacityType == "capacity-block" || capacityType == "reserved-capacity" {
			return "InvalidFleetConfiguration", fmt.Sprintf("A %s fleet must launch from a template targeting a capacity reservation", capacityType)
		}
		return "", ""
	}
	cr, ok := st.network.capacityReservations[target]
	switch {
	case !ok:
		return "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", target)
	case cr.State != "active":
		return "InvalidCapacityReservationId.Malformed", fmt.Sprintf("The capacity reservation %s is %s", target, cr.State)
	case cr.InstanceType != o.instanceType || cr.Zone != o.zone:
		return "InvalidFleetConfiguration", fmt.Sprintf("The capacity reservation %s is for %s in %s, not %s in %s",
			target, cr.InstanceType, cr.Zone, o.instanceType, o.zone)
	case (cr.ReservationType == "capacity-block") != (capacityType == "capacity-block"),
		cr.ReservationType == "capacity-block" && o.template.data.Reservation.MarketType != "capacity-block":
		return "InvalidFleetConfiguration", fmt.Sprintf("The capacity reservation %s of type %s can't be launched into as %s", target, cr.ReservationType, capacityType)
	case capacityType == "spot":
		return "InvalidFleetConfiguration", "Spot instances can't launch into a capacity reservation"
	case cr.Available < n:
		return "ReservationCapacityExceeded", fmt.Sprintf("The requested capacity reservation %s has insufficient capacity", target)
	}
	return "", ""
}

// takeReservation counts an instance launched into the reservation its template targets. The caller holds
// the state.
func (st *state) takeReservation(id string) {
	if cr, ok := st.network.capacityReservations[id]; ok && cr.Available > 0 {
		cr.Available--
	}
}

// releaseReservation gives a terminated instance's slot back to its reservation. The caller holds the state.
func (st *state) releaseReservation(id string) {
	if cr, ok := st.network.capacityReservations[id]; ok && cr.Available < cr.Total {
		cr.Available++
	}
}

// CapacityReservation returns the reservation as stored (with its current available count).
func (s *Server) CapacityReservation(id string) (CapacityReservation, bool) {
	var (
		out CapacityReservation
		ok  bool
	)
	s.withState(func(st *state) {
		var cr *CapacityReservation
		if cr, ok = st.network.capacityReservations[id]; ok {
			out = *cr
		}
	})
	return out, ok
}

// EndCapacityReservation ends a reservation of type default as EC2 does when it expires or is cancelled
// (state "expired" or "cancelled"): it has no slots any more, and the instances running in it carry on as
// on-demand instances, DescribeInstances no longer naming the reservation. It returns those instances' IDs.
// (EC2 reclaims the instances of a capacity block instead, which this does not model: refused.)
func (s *Server) EndCapacityReservation(id, ended string) ([]string, error) {
	if ended != "expired" && ended != "cancelled" {
		return nil, fmt.Errorf("a reservation ends expired or cancelled, not %q", ended)
	}
	var (
		moved []string
		err   error
	)
	s.withState(func(st *state) {
		cr, ok := st.network.capacityReservations[id]
		switch {
		case !ok:
			err = fmt.Errorf("no capacity reservation %s", id)
			return
		case cr.ReservationType == "capacity-block":
			err = fmt.Errorf("capacity reservation %s is a capacity block, whose instances EC2 reclaims", id)
			return
		}
		cr.State, cr.Available = ended, 0
		for _, in := range st.instances.byID {
			if in.CapacityReservationID == id && (in.State == StatePending || in.State == StateRunning) {
				in.CapacityReservationID = ""
				moved = append(moved, in.ID)
			}
		}
	})
	slices.Sort(moved)
	return moved, err
}
