package fakeaws

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lathe-autoscaler/lathe/pkg/catalog"
)

// pricingState is what the fake charges: on-demand prices (the Pricing API's products, from the embedded
// catalog's prices of the region) and the spot price history per instance type and zone.
type pricingState struct {
	products []priceProduct
	// spot is the spot price history: instance type → zone → entries, oldest first.
	spot map[string]map[string][]spotEntry
}

// priceProduct is one product of the Pricing API: an instance type under one operating system.
type priceProduct struct {
	instanceType    string
	productFamily   string
	tenancy         string
	operatingSystem string
	price           float64
}

type spotEntry struct {
	price float64
	at    time.Time
}

func init() {
	seeders = append(seeders, seedPricing)
	handleEC2("DescribeSpotPriceHistory", (*Server).describeSpotPriceHistory)
	handleJSON("AWSPriceListService.GetProducts", (*Server).getProducts)
}

// Spot history as seeded: the price in effect was set an hour ago and differs from the one before it, and
// each zone's price is a little above the previous zone's, so that taking the newest entry per zone matters.
const (
	spotSeedAge        = time.Hour
	spotPreviousFactor = 1.25
	spotZoneStep       = 0.02
)

func seedPricing(s *Server) {
	st := pricingState{spot: map[string]map[string][]spotEntry{}}
	onDemand, err := catalog.OnDemandPrices(s.opts.Region)
	if err != nil {
		// A region the embedded data has no prices for: the fake charges nothing and lists no products.
		s.state.pricing = st
		return
	}
	now := s.opts.Clock.Now()
	for _, sh := range catalog.EC2Shapes() {
		price, ok := onDemand[sh.Name]
		if !ok {
			continue
		}
		linux := priceProduct{instanceType: sh.Name, productFamily: "Compute Instance", tenancy: "Shared", operatingSystem: "Linux", price: price}
		if sh.BareMetal {
			linux.productFamily, linux.tenancy = "Compute Instance (bare metal)", "Dedicated"
		}
		windows := linux
		windows.operatingSystem, windows.price = "Windows", price*1.5
		st.products = append(st.products, linux, windows)
		zones := map[string][]spotEntry{}
		for i, z := range s.opts.Zones {
			current := SeededSpotPrice(price, i)
			zones[z] = []spotEntry{
				{price: current * spotPreviousFactor, at: now.Add(-2 * spotSeedAge)},
				{price: current, at: now.Add(-spotSeedAge)},
			}
		}
		st.spot[sh.Name] = zones
	}
	s.state.pricing = st
}

// SeededSpotPrice is the spot price the fake seeds as current for a type with the on-demand price in the
// fake's zone number zoneIndex (0 for the first zone): the catalog's spot model, a little higher per zone.
func SeededSpotPrice(onDemand float64, zoneIndex int) float64 {
	return onDemand * catalog.DefaultSpotPriceFraction * (1 + spotZoneStep*float64(zoneIndex))
}

// SetSpotPrice records a new spot price for the type in the zone, effective now (the fake's clock).
func (s *Server) SetSpotPrice(instanceType, zone string, price float64) {
	at := s.opts.Clock.Now()
	s.withState(func(st *state) {
		if st.pricing.spot[instanceType] == nil {
			st.pricing.spot[instanceType] = map[string][]spotEntry{}
		}
		st.pricing.spot[instanceType][zone] = append(st.pricing.spot[instanceType][zone], spotEntry{price: price, at: at})
	})
}

// SetOnDemandPrice changes the on-demand price the Pricing API lists for the type (Linux; Windows costs half
// as much again).
func (s *Server) SetOnDemandPrice(instanceType string, price float64) {
	s.withState(func(st *state) {
		for i := range st.pricing.products {
			p := &st.pricing.products[i]
			if p.instanceType != instanceType {
				continue
			}
			p.price = price
			if p.operatingSystem == "Windows" {
				p.price = price * 1.5
			}
		}
	})
}

// spotProductDescription is the only product description the fake's spot history has.
const spotProductDescription = "Linux/UNIX"

type spotPrice struct {
	AvailabilityZone   string `xml:"availabilityZone"`
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
}

type describeSpotPriceHistoryResponse struct {
	History   []spotPrice `xml:"spotPriceHistorySet>item"`
	NextToken string      `xml:"nextToken"`
}

// describeSpotPriceHistoryMax is the page size when MaxResults is absent.
const describeSpotPriceHistoryMax = 1000

// describeSpotPriceHistory answers as EC2 does: the entries between StartTime and EndTime plus, per type
// and zone, the one in effect at StartTime; newest first.
func (s *Server) describeSpotPriceHistory(q query) (any, error) {
	start, end, err := spotWindow(q)
	if err != nil {
		return nil, err
	}
	types := q.Strings("InstanceType")
	products := q.Strings("ProductDescription")
	zone := q["AvailabilityZone"]
	filters := filtersOf(q)
	var matched []spotPrice
	var stamps []time.Time
	s.withState(func(st *state) {
		names := make([]string, 0, len(st.pricing.spot))
		for name := range st.pricing.spot {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if len(types) > 0 && !slices.Contains(types, name) {
				continue
			}
			for _, z := range st.zones.names {
				if zone != "" && zone != z {
					continue
				}
				if len(products) > 0 && !slices.Contains(products, spotProductDescription) {
					continue
				}
				for _, e := range spotEntriesIn(st.pricing.spot[name][z], start, end) {
					p := spotPrice{AvailabilityZone: z, InstanceType: name, ProductDescription: spotProductDescription,
						SpotPrice: strconv.FormatFloat(e.price, 'f', 6, 64), Timestamp: e.at.UTC().Format(time.RFC3339)}
					if !matchFilters(filters, nil, func(f string) []string {
						switch f {
						case "availability-zone":
							return []string{p.AvailabilityZone}
						case "instance-type":
							return []string{p.InstanceType}
						case "product-description":
							return []string{p.ProductDescription}
						case "spot-price":
							return []string{p.SpotPrice}
						}
						return nil
					}) {
						continue
					}
					matched = append(matched, p)
					stamps = append(stamps, e.at)
				}
			}
		}
	})
	// Newest first (stable, so the order within one timestamp stays by type and zone).
	idx := make([]int, len(matched))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return stamps[b].Compare(stamps[a]) })
	sorted := make([]spotPrice, len(matched))
	for i, j := range idx {
		sorted[i] = matched[j]
	}
	from, to, next, err := page(q, len(sorted), describeSpotPriceHistoryMax)
	if err != nil {
		return nil, err
	}
	return describeSpotPriceHistoryResponse{History: sorted[from:to], NextToken: next}, nil
}

// spotWindow reads StartTime and EndTime (zero when absent).
func spotWindow(q query) (start, end time.Time, err error) {
	for key, t := range map[string]*time.Time{"StartTime": &start, "EndTime": &end} {
		v, ok := q[key]
		if !ok {
			continue
		}
		if *t, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return time.Time{}, time.Time{}, errorf("InvalidParameterValue", "%s %q is not a time", key, v)
		}
	}
	return start, end, nil
}

// spotEntriesIn returns the entries (oldest first) in [start, end] and the last one before start.
func spotEntriesIn(entries []spotEntry, start, end time.Time) []spotEntry {
	var out []spotEntry
	var before *spotEntry
	for i := range entries {
		e := entries[i]
		if !end.IsZero() && e.at.After(end) {
			continue
		}
		if !start.IsZero() && e.at.Before(start) {
			if before == nil || e.at.After(before.at) {
				before = &entries[i]
			}
			continue
		}
		out = append(out, e)
	}
	if before != nil {
		out = append([]spotEntry{*before}, out...)
	}
	return out
}

// The Pricing API's GetProducts.

type pricingFilter struct {
	Field string `json:"Field"`
	Type  string `json:"Type"`
	Value string `json:"Value"`
}

type getProductsRequest struct {
	ServiceCode   string          `json:"ServiceCode"`
	Filters       []pricingFilter `json:"Filters"`
	FormatVersion string          `json:"FormatVersion"`
	NextToken     string          `json:"NextToken"`
	MaxResults    int             `json:"MaxResults"`
}

type getProductsResponse struct {
	FormatVersion string   `json:"FormatVersion"`
	NextToken     string   `json:"NextToken,omitempty"`
	PriceList     []string `json:"PriceList"`
}

// getProductsMax is GetProducts' page size limit.
const getProductsMax = 100

func (s *Server) getProducts(body []byte) (any, error) {
	var req getProductsRequest
	if err := decodeJSON(body, &req); err != nil {
		return nil, err
	}
	if req.ServiceCode == "" {
		return nil, errorf("ValidationException", "ServiceCode is required")
	}
	if req.MaxResults > getProductsMax {
		return nil, errorf("ValidationException", "MaxResults must be at most %d", getProductsMax)
	}
	for _, f := range req.Filters {
		if f.Type != "TERM_MATCH" {
			return nil, errorf("ValidationException", "filter type %q is not supported", f.Type)
		}
	}
	var matched []priceProduct
	s.withState(func(st *state) {
		if req.ServiceCode != "AmazonEC2" {
			return
		}
		for _, p := range st.pricing.products {
			attrs := p.attributes(s.opts.Region)
			if slices.ContainsFunc(req.Filters, func(f pricingFilter) bool {
				v, ok := attrs[f.Field]
				return !ok || !strings.EqualFold(v, f.Value)
			}) {
				continue
			}
			matched = append(matched, p)
		}
	})
	max := req.MaxResults
	if max <= 0 {
		max = getProductsMax
	}
	start := 0
	if req.NextToken != "" {
		n, err := strconv.Atoi(req.NextToken)
		if err != nil || n < 0 || n > len(matched) {
			return nil, errorf("InvalidNextTokenException", "the token %q is not valid", req.NextToken)
		}
		start = n
	}
	end := min(start+max, len(matched))
	out := getProductsResponse{FormatVersion: "aws_v1", PriceList: []string{}}
	if end < len(matched) {
		out.NextToken = strconv.Itoa(end)
	}
	for _, p := range matched[start:end] {
		doc, err := p.document(s.opts.Region)
		if err != nil {
			return nil, err
		}
		out.PriceList = append(out.PriceList, doc)
	}
	return out, nil
}

// attributes are the product's attributes as the Pricing API filters on them.
func (p priceProduct) attributes(region string) map[string]string {
	return map[string]string{
		"serviceCode": "AmazonEC2", "productFamily": p.productFamily, "instanceType": p.instanceType,
		"regionCode": region, "location": regionLocation(region), "operatingSystem": p.operatingSystem,
		"tenancy": p.tenancy, "preInstalledSw": "NA", "capacitystatus": "Used", "marketoption": "OnDemand",
		"licenseModel": "No License required", "usagetype": "BoxUsage:" + p.instanceType,
	}
}

// document writes the product as a price-list document (the JSON string GetProducts lists).
func (p priceProduct) document(region string) (string, error) {
	sku := fmt.Sprintf("FAKE%X", fnv32(p.instanceType+"/"+p.operatingSystem+"/"+p.tenancy))
	const offerTerm, rateCode = "JRTCKXETXF", "6YS6EN2CT7"
	doc := map[string]any{
		"product": map[string]any{
			"productFamily": p.productFamily,
			"attributes":    p.attributes(region),
			"sku":           sku,
		},
		"serviceCode":     "AmazonEC2",
		"version":         "20260720000000",
		"publicationDate": "2026-07-20T00:00:00Z",
		"terms": map[string]any{
			"OnDemand": map[string]any{
				sku + "." + offerTerm: map[string]any{
					"offerTermCode": offerTerm, "sku": sku, "effectiveDate": "2026-07-01T00:00:00Z",
					"priceDimensions": map[string]any{
						sku + "." + offerTerm + "." + rateCode: map[string]any{
							"unit": "Hrs", "rateCode": sku + "." + offerTerm + "." + rateCode,
							"description":  fmt.Sprintf("$%.4f per On Demand %s %s Instance Hour", p.price, p.operatingSystem, p.instanceType),
							"pricePerUnit": map[string]string{"USD": strconv.FormatFloat(p.price, 'f', 10, 64)},
							"beginRange":   "0", "endRange": "Inf", "appliesTo": []string{},
						},
					},
					"termAttributes": map[string]string{},
				},
			},
		},
	}
	b, err := json.Marshal(doc)
	return string(b), err
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// regionLocation is the Pricing API's location name of a region.
func regionLocation(region string) string {
	switch region {
	case "us-east-1":
		return "US East (N. Virginia)"
	case "us-east-2":
		return "US East (Ohio)"
	case "us-west-1":
		return "US West (N. California)"
	case "us-west-2":
		return "US West (Oregon)"
	case "us-gov-east-1":
		return "AWS GovCloud (US-East)"
	case "us-gov-west-1":
		return "AWS GovCloud (US-West)"
	case "eu-west-1":
		return "EU (Ireland)"
	}
	return region
}
