package cloudprovider

import (
	"cmp"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// InstanceType is one launchable shape: its labels (as requirements, e.g. arch In [amd64], zone In [the
// zones it is offered in]), what it offers for sale, and its resources.
type InstanceType struct {
	Name         string
	Requirements scheduling.Requirements
	Offerings    Offerings
	// Capacity is what the machine has (cpu, memory, pods, ephemeral-storage, extended resources).
	Capacity corev1.ResourceList
	Overhead InstanceTypeOverhead
}

// InstanceTypeOverhead is what the node itself keeps back from pods.
type InstanceTypeOverhead struct {
	KubeReserved      corev1.ResourceList
	SystemReserved    corev1.ResourceList
	EvictionThreshold corev1.ResourceList
}

// Total is the sum of every overhead component.
func (o InstanceTypeOverhead) Total() corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, list := range []corev1.ResourceList{o.KubeReserved, o.SystemReserved, o.EvictionThreshold} {
		scheduling.AddResources(total, list)
	}
	return total
}

// Allocatable is capacity minus overhead, floored at zero for each resource.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	out := corev1.ResourceList{}
	overhead := it.Overhead.Total()
	for name, q := range it.Capacity {
		left := q.DeepCopy()
		if o, ok := overhead[name]; ok {
			left.Sub(o)
		}
		if left.Sign() < 0 {
			left.Set(0)
		}
		out[name] = left
	}
	return out
}

// InstanceTypes is a list of instance types with chainable helpers.
type InstanceTypes []*InstanceType

// Compatible returns the instance types whose labels and available offerings allow the requirements. A
// type's name is its node.kubernetes.io/instance-type label.
func (its InstanceTypes) Compatible(requirements scheduling.Requirements) InstanceTypes {
	var out InstanceTypes
	names := requirements.Get(v1.LabelInstanceType) // a NodeClaim lists its types: the cheap test first
	for _, it := range its {
		if names.Has(it.Name) && it.Requirements.Intersects(requirements) == nil && it.Offerings.anyAvailableFor(requirements) {
			out = append(out, it)
		}
	}
	return out
}

// Named returns the instance type called name (its node.kubernetes.io/instance-type label), or nil.
func (its InstanceTypes) Named(name string) *InstanceType {
	if i := slices.IndexFunc(its, func(it *InstanceType) bool { return it.Name == name }); i >= 0 {
		return its[i]
	}
	return nil
}

// LaunchedPrice is the hourly price of the offering the NodeClaim launched on, when it launched as this
// instance type: the cheapest offering of the type compatible with the claim's labels (zone, capacity type,
// reservation). It is 0 for a nil type, a claim not launched yet or of another type, or an offering the type
// no longer lists.
func (it *InstanceType) LaunchedPrice(claim *v1.NodeClaim) float64 {
	if claim.Status.ProviderID == "" {
		return 0
	}
	return it.PriceAt(claim.Labels)
}

// PriceAt is the hourly price of a machine of this type labelled as given (a launched NodeClaim, or its
// Node): the cheapest offering of the type compatible with the labels (zone, capacity type, reservation). It
// is 0 for a nil type, labels naming another type, or an offering the type no longer lists.
func (it *InstanceType) PriceAt(labels map[string]string) float64 {
	if it == nil || it.Name != labels[v1.LabelInstanceType] {
		return 0
	}
	if o, ok := it.Offerings.Compatible(scheduling.FromLabels(labels)).Cheapest(); ok {
		return o.Price
	}
	return 0
}

// OrderByPrice returns a copy sorted by the cheapest available offering the requirements allow, then by
// name. Types with no such offering go last.
func (its InstanceTypes) OrderByPrice(requirements scheduling.Requirements) InstanceTypes {
	type priced struct {
		it    *InstanceType
		price float64
	}
	list := make([]priced, len(its))
	for i, it := range its {
		list[i] = priced{it, it.Offerings.Available().Compatible(requirements).CheapestPrice()}
	}
	slices.SortStableFunc(list, func(a, b priced) int {
		return cmp.Or(cmp.Compare(a.price, b.price), cmp.Compare(a.it.Name, b.it.Name))
	})
	out := make(InstanceTypes, len(list))
	for i := range list {
		out[i] = list[i].it
	}
	return out
}

// Truncate returns at most n instance types, keeping the order.
func (its InstanceTypes) Truncate(n int) InstanceTypes {
	if len(its) <= n {
		return its
	}
	return its[:n]
}

// Offering is one way to buy an instance type: a zone and capacity type at a price.
type Offering struct {
	Zone         string
	CapacityType string
	// Price is per hour, in the catalog's currency (USD for EC2).
	Price float64
	// Available is false when the offering recently failed with insufficient capacity.
	Available bool
	// Reservation is the capacity reservation of a reserved offering (nil for the others, which keeps the
	// many offerings of a catalog small).
	Reservation *Reservation
}

// Reservation is a capacity reservation a reserved offering launches into.
type Reservation struct {
	ID string
	// Capacity is how many more instances the reservation can take.
	Capacity int
	// Labels are the provider's labels a node launched into the reservation gets (on AWS its id, type and
	// interruptible); requirements on their keys must allow them.
	Labels map[string]string
}

// ReservationID is the offering's capacity reservation ("" for none).
func (o Offering) ReservationID() string {
	if o.Reservation == nil {
		return ""
	}
	return o.Reservation.ID
}

// Offerings is a list of offerings with chainable helpers.
type Offerings []Offering

// Available returns the offerings with capacity.
func (ofs Offerings) Available() Offerings {
	var out Offerings
	for _, o := range ofs {
		if o.Available {
			out = append(out, o)
		}
	}
	return out
}

// anyAvailableFor reports whether one of the offerings is available and allowed by the requirements, as
// len(ofs.Available().Compatible(requirements)) > 0 would, without building either list.
func (ofs Offerings) anyAvailableFor(requirements scheduling.Requirements) bool {
	return slices.ContainsFunc(ofs, func(o Offering) bool { return o.Available && o.IsCompatible(requirements) })
}

// Compatible returns the offerings whose zone and capacity type the requirements allow.
func (ofs Offerings) Compatible(requirements scheduling.Requirements) Offerings {
	var out Offerings
	for _, o := range ofs {
		if o.IsCompatible(requirements) {
			out = append(out, o)
		}
	}
	return out
}

// IsCompatible reports whether the requirements allow the offering's zone, capacity type and labels.
func (o Offering) IsCompatible(requirements scheduling.Requirements) bool {
	if r, ok := requirements[v1.LabelTopologyZone]; ok && !r.Has(o.Zone) {
		return false
	}
	if r, ok := requirements[v1.CapacityTypeLabelKey]; ok && !r.Has(o.CapacityType) {
		return false
	}
	if o.Reservation == nil {
		return true
	}
	for k, v := range o.Reservation.Labels {
		if r, ok := requirements[k]; ok && !r.Has(v) {
			return false
		}
	}
	return true
}

// Reserved returns the reserved offerings.
func (ofs Offerings) Reserved() Offerings {
	var out Offerings
	for _, o := range ofs {
		if o.CapacityType == v1.CapacityTypeReserved {
			out = append(out, o)
		}
	}
	return out
}

// Cheapest returns the lowest-priced offering (ties: zone, then capacity type), and false for an empty list.
func (ofs Offerings) Cheapest() (Offering, bool) {
	if len(ofs) == 0 {
		return Offering{}, false
	}
	return slices.MinFunc(ofs, compareOfferings), true
}

// CheapestCompatible is Available().Compatible(requirements).Cheapest() without building the two lists
// (the solver asks it for every NodeClaim of every plan it compares).
func (ofs Offerings) CheapestCompatible(requirements scheduling.Requirements) (Offering, bool) {
	var best Offering
	found := false
	for _, o := range ofs {
		// Strictly cheaper only: the first of equally cheap offerings wins, as in Cheapest.
		if o.Available && o.IsCompatible(requirements) && (!found || compareOfferings(o, best) < 0) {
			best, found = o, true
		}
	}
	return best, found
}

// CheapestPrice is the price of the cheapest offering, or +Inf for an empty list.
func (ofs Offerings) CheapestPrice() float64 {
	if o, ok := ofs.Cheapest(); ok {
		return o.Price
	}
	return math.Inf(1)
}

// OrderByPrice returns a copy sorted by price, then zone, then capacity type.
func (ofs Offerings) OrderByPrice() Offerings {
	out := slices.Clone(ofs)
	slices.SortStableFunc(out, compareOfferings)
	return out
}

// Zones returns the distinct zones of the offerings, sorted.
func (ofs Offerings) Zones() []string {
	var out []string
	for _, o := range ofs {
		out = append(out, o.Zone)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func compareOfferings(a, b Offering) int {
	return cmp.Or(cmp.Compare(a.Price, b.Price), cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.CapacityType, b.CapacityType), cmp.Compare(a.ReservationID(), b.ReservationID()))
}
