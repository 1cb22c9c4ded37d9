package fakeaws

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

func init() {
	handleEC2("CreateFleet", (*Server).createFleet)
}

// fleetOverride is one launch template config's override: a pool EC2 may launch from.
type fleetOverride struct {
	template *launchTemplate
	version  string
	// templateName and templateID are what the request named the template by.
	templateName, templateID string
	instanceType, subnetID   string
	zone, imageID            string
	priority                 string
	price                    float64
}

type launchTemplateSpecResponse struct {
	ID      string `xml:"launchTemplateId,omitempty"`
	Name    string `xml:"launchTemplateName,omitempty"`
	Version string `xml:"version,omitempty"`
}

type overridesResponse struct {
	InstanceType string `xml:"instanceType"`
	SubnetID     string `xml:"subnetId,omitempty"`
	Zone         string `xml:"availabilityZone,omitempty"`
	ImageID      string `xml:"imageId,omitempty"`
	Priority     string `xml:"priority,omitempty"`
}

type templateAndOverrides struct {
	Spec      launchTemplateSpecResponse `xml:"launchTemplateSpecification"`
	Overrides overridesResponse          `xml:"overrides"`
}

func (o *fleetOverride) response() templateAndOverrides {
	return templateAndOverrides{
		Spec:      launchTemplateSpecResponse{ID: o.template.id, Name: o.template.name, Version: o.version},
		Overrides: overridesResponse{InstanceType: o.instanceType, SubnetID: o.subnetID, Zone: o.zone, ImageID: o.imageID, Priority: o.priority},
	}
}

type fleetInstance struct {
	Overrides    templateAndOverrides `xml:"launchTemplateAndOverrides"`
	Lifecycle    string               `xml:"lifecycle"`
	InstanceIDs  []string             `xml:"instanceIds>item"`
	InstanceType string               `xml:"instanceType"`
}

type fleetError struct {
	Overrides templateAndOverrides `xml:"launchTemplateAndOverrides"`
	Lifecycle string               `xml:"lifecycle"`
	Code      string               `xml:"errorCode"`
	Message   string               `xml:"errorMessage"`
}

type createFleetResponse struct {
	FleetID   string          `xml:"fleetId"`
	Errors    []fleetError    `xml:"errorSet>item"`
	Instances []fleetInstance `xml:"fleetInstanceSet>item"`
}

// createFleet answers an instant fleet: it launches TotalTargetCapacity instances of the default capacity
// type from the cheapest overrides that have capacity (lowest-price and price-capacity-optimized both pick
// by price here, ties by priority then order), and reports an InsufficientInstanceCapacity error for each
// override it found without capacity. An override whose launch template targets a capacity reservation
// launches into it (see reservationError) or fails with ReservationCapacityExceeded when it is full. A
// repeated client token gets the first answer again.
func (s *Server) createFleet(q query) (any, error) {
	if t := q["Type"]; t != "instant" {
		return nil, errorf("InvalidParameterValue", "fakeaws only fakes fleets of type instant, not %q", t)
	}
	capacityType := q["TargetCapacitySpecification.DefaultTargetCapacityType"]
	if !targetCapacityTypes[capacityType] {
		return nil, errorf("InvalidParameterValue", "DefaultTargetCapacityType must be spot, on-demand, capacity-block or reserved-capacity, got %q", capacityType)
	}
	total, err := q.Int("TargetCapacitySpecification.TotalTargetCapacity", 0)
	if err != nil || total < 1 {
		return nil, errorf("InvalidTargetCapacitySpecification", "TotalTargetCapacity must be at least 1")
	}
	tags := tagSpecifications(q, "TagSpecification")
	token := q["ClientToken"]
	var (
		out      createFleetResponse
		launched []Instance
		boot     *booter
	)
	s.withState(func(st *state) {
		if prev, ok := st.instances.fleets[token]; ok && token != "" {
			out = prev
			return
		}
		var overrides []*fleetOverride
		if overrides, err = s.fleetOverrides(st, q, capacityType); err != nil {
			return
		}
		out, launched = s.launchFleet(st, overrides, capacityType, total, tags)
		if token != "" {
			if st.instances.fleets == nil {
				st.instances.fleets = map[string]createFleetResponse{}
			}
			st.instances.fleets[token] = out
		}
		boot = st.instances.boot
	})
	if err != nil {
		return nil, err
	}
	for _, in := range launched {
		s.AdjustSubnetIPs(in.SubnetID, -1) // an instance takes an address of its subnet
		if boot != nil {
			boot.start(in)
		}
	}
	return out, nil
}

// fleetOverrides reads the launch template configs. A template that doesn't exist fails the request.
func (s *Server) fleetOverrides(st *state, q query, capacityType string) ([]*fleetOverride, error) {
	prices := catalogPrices(s.opts.Region)
	var out []*fleetOverride
	for _, cfg := range q.List("LaunchTemplateConfigs") {
		name, id := cfg["LaunchTemplateSpecification.LaunchTemplateName"], cfg["LaunchTemplateSpecification.LaunchTemplateId"]
		lt := st.launchTemplates.find(name, id)
		if lt == nil {
			return nil, errorf("InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name+id)
		}
		overrides := cfg.List("Overrides")
		if len(overrides) == 0 {
			overrides = []query{{}}
		}
		for _, o := range overrides {
			fo := &fleetOverride{template: lt, version: cfg["LaunchTemplateSpecification.Version"], templateName: name, templateID: id,
				instanceType: cmp.Or(o["InstanceType"], lt.data.InstanceType), subnetID: o["SubnetId"], zone: o["AvailabilityZone"],
				imageID: o["ImageId"], priority: o["Priority"], price: math.Inf(1)}
			if fo.zone == "" && len(s.opts.Zones) > 0 {
				fo.zone = s.opts.Zones[0]
			}
			if p, ok := prices[fo.instanceType]; ok {
				fo.price = p
				if capacityType == "spot" {
					fo.price = p * spotPriceFraction
				}
			}
			out = append(out, fo)
		}
	}
	if len(out) == 0 {
		return nil, errorf("InvalidParameterValue", "LaunchTemplateConfigs must name at least one launch template")
	}
	return out, nil
}

// launchFleet starts total instances from the cheapest overrides with capacity. The caller holds the state.
func (s *Server) launchFleet(st *state, overrides []*fleetOverride, capacityType string, total int, tags map[string]map[string]string) (createFleetResponse, []Instance) {
	st.instances.lastFleet++
	out := createFleetResponse{FleetID: fmt.Sprintf("fleet-%08x-0000-4000-8000-%012x", st.instances.lastFleet, st.instances.lastFleet)}
	slices.SortStableFunc(overrides, func(a, b *fleetOverride) int {
		return cmp.Or(cmp.Compare(a.price, b.price), cmp.Compare(priorityOf(a), priorityOf(b)))
	})
	var chosen *fleetOverride
	for _, o := range overrides {
		code, message := st.reservationError(o, capacityType, total)
		switch {
		case math.IsInf(o.price, 1):
			out.Errors = append(out.Errors, fleetError{Overrides: o.response(), Lifecycle: capacityType, Code: "InvalidFleetConfiguration",
				Message: fmt.Sprintf("Your requested instance type (%s) is not supported in your requested Availability Zone (%s).", o.instanceType, o.zone)})
		case st.instances.insufficient[offeringKey{o.instanceType, o.zone, capacityType}]:
			out.Errors = append(out.Errors, fleetError{Overrides: o.response(), Lifecycle: capacityType, Code: "InsufficientInstanceCapacity",
				Message: fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s).", o.instanceType, o.zone)})
		case code != "":
			out.Errors = append(out.Errors, fleetError{Overrides: o.response(), Lifecycle: capacityType, Code: code, Message: message})
		case chosen == nil:
			chosen = o
		}
	}
	if chosen == nil {
		return out, nil
	}
	fi := fleetInstance{Overrides: chosen.response(), Lifecycle: capacityType, InstanceType: chosen.instanceType}
	var launched []Instance
	for range total {
		in := st.instances.add(Instance{
			InstanceType: chosen.instanceType, Zone: chosen.zone, SubnetID: chosen.subnetID, ImageID: cmp.Or(chosen.imageID, chosen.template.data.ImageID),
			CapacityType: capacityType, Tags: tags["instance"], SecurityGroups: chosen.template.data.SecurityGroupIDs,
			InstanceProfile: chosen.template.data.InstanceProfile, LaunchTemplate: chosen.template.name, UserData: chosen.template.data.UserData,
			MetadataHTTPTokens: chosen.template.data.HTTPTokens, MetadataHopLimit: chosen.template.data.HTTPPutResponseHopLimit,
			CapacityReservationID: chosen.template.data.Reservation.TargetID,
		}, s.opts.Clock.Now())
		st.takeReservation(in.CapacityReservationID)
		fi.InstanceIDs = append(fi.InstanceIDs, in.ID)
		launched = append(launched, in)
	}
	out.Instances = []fleetInstance{fi}
	return out, launched
}

func priorityOf(o *fleetOverride) float64 {
	p, err := strconv.ParseFloat(o.priority, 64)
	if err != nil {
		return math.Inf(1)
	}
	return p
}

// spotPriceFraction prices spot as the embedded catalog does (the data has no spot prices).
const spotPriceFraction = 0.35

var (
	pricesByRegion = map[string]map[string]float64{}
	pricesMu       sync.Mutex
)

// catalogPrices are the embedded catalog's on-demand prices in the region, by instance type.
func catalogPrices(region string) map[string]float64 {
	pricesMu.Lock()
	defer pricesMu.Unlock()
	if p, ok := pricesByRegion[region]; ok {
		return p
	}
	out := map[string]float64{}
	its, err := catalog.EC2(catalog.EC2Options{Region: region, Zones: []string{region + "a"}, CapacityTypes: []string{"on-demand"}})
	if err == nil {
		for _, it := range its {
			if o, ok := cloudprovider.Offerings(it.Offerings).Cheapest(); ok {
				out[it.Name] = o.Price
			}
		}
	}
	pricesByRegion[region] = out
	return out
}
