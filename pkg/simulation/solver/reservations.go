package solver

import (
	"cmp"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// reservationSlots counts what is left of each capacity reservation behind the pools' reserved offerings
// (by reservation ID, the offerings' Reservation.Capacity; the least when pools disagree) while a plan hands
// out its claims. Packing prices reserved offerings like any other (nearly free), so it may put more claims
// on a reservation's type than the reservation holds; the plan then gives slots to claims in creation order
// and moves the rest to the other capacity types their requirements allow, or leaves their pods unplaced.
type reservationSlots map[string]int

// newReservationSlots returns the reservations' slots, nil when no pool has a reserved offering (then
// nothing is checked).
func newReservationSlots(pools []*poolInfo) reservationSlots {
	var out reservationSlots
	for _, p := range pools {
		for _, t := range p.types {
			for _, o := range t.it.Offerings {
				if o.CapacityType != v1.CapacityTypeReserved || o.Reservation == nil {
					continue
				}
				if out == nil {
					out = reservationSlots{}
				}
				if n, ok := out[o.Reservation.ID]; !ok || o.Reservation.Capacity < n {
					out[o.Reservation.ID] = o.Reservation.Capacity
				}
			}
		}
	}
	return out
}

// assign settles a planned claim's capacity type. A claim that can launch into a reservation with a slot
// left takes the slot, and its requirements name the reservation (capacity type reserved and the
// offering's labels, such as its ID) so that the launch targets it; one that can't loses the reserved
// capacity type and its cheapest other offering sets its zone and price. It returns false when the claim
// can't launch at all (it allows only reserved capacity and no reservation it can use has a slot).
func (s reservationSlots) assign(nc *NodeClaimPlan, reqs scheduling.Requirements, instanceTypeReq func([]string) scheduling.Requirement) bool {
	if !allowsCapacityType(reqs, v1.CapacityTypeReserved) {
		return true
	}
	type candidate struct {
		it *cloudprovider.InstanceType
		o  cloudprovider.Offering
	}
	var reserved []candidate
	for _, it := range nc.InstanceTypes {
		for _, o := range it.Offerings {
			if o.CapacityType == v1.CapacityTypeReserved && o.Reservation != nil && o.Available && o.IsCompatible(reqs) {
				reserved = append(reserved, candidate{it, o})
			}
		}
	}
	if len(reserved) == 0 {
		return true
	}
	slices.SortStableFunc(reserved, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.o.Price, b.o.Price), cmp.Compare(a.o.Reservation.ID, b.o.Reservation.ID))
	})
	for _, c := range reserved {
		if s[c.o.Reservation.ID] <= 0 {
			continue
		}
		s[c.o.Reservation.ID]--
		narrowed := reqs.Clone()
		narrowed[v1.CapacityTypeLabelKey] = scheduling.MustRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved)
		for _, k := range slices.Sorted(maps.Keys(c.o.Reservation.Labels)) {
			narrowed[k] = scheduling.MustRequirement(k, corev1.NodeSelectorOpIn, c.o.Reservation.Labels[k])
		}
		narrowed[v1.LabelTopologyZone] = scheduling.MustRequirement(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, c.o.Zone)
		nc.narrow(narrowed, instanceTypeReq)
		return true
	}
	var rest []string
	for _, ct := range []string{v1.CapacityTypeOnDemand, v1.CapacityTypeSpot} {
		if allowsCapacityType(reqs, ct) {
			rest = append(rest, ct)
		}
	}
	if len(rest) == 0 {
		return false
	}
	narrowed := reqs.Clone()
	narrowed[v1.CapacityTypeLabelKey] = scheduling.MustRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, rest...)
	return nc.narrow(narrowed, instanceTypeReq)
}

// narrow keeps the claim's instance types that have an available offering the requirements allow, cheapest
// first, and takes its requirements, zone, capacity type and price from them; false when none is left.
func (nc *NodeClaimPlan) narrow(reqs scheduling.Requirements, instanceTypeReq func([]string) scheduling.Requirement) bool {
	its := cloudprovider.InstanceTypes(nc.InstanceTypes).Compatible(reqs).OrderByPrice(reqs)
	if len(its) == 0 {
		return false
	}
	names := make([]string, len(its))
	for i, it := range its {
		names[i] = it.Name
	}
	final := reqs.Clone()
	final.Add(instanceTypeReq(names))
	nc.InstanceTypes, nc.InstanceTypeNames, nc.Requirements = its, names, final.NodeSelectorRequirements()
	if o, ok := its[0].Offerings.CheapestCompatible(reqs); ok {
		nc.Zone, nc.CapacityType, nc.PricePerHour = o.Zone, o.CapacityType, o.Price
	}
	return true
}

func allowsCapacityType(reqs scheduling.Requirements, capacityType string) bool {
	r, ok := reqs[v1.CapacityTypeLabelKey]
	return !ok || r.Has(capacityType)
}

// reservationReason is why the pods of a claim that allows only reserved capacity stay unplaced.
const reservationReason = "no capacity reservation the pods can use has a slot left"
