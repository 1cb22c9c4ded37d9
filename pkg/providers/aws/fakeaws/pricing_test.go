package fakeaws

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/lathe-autoscaler/lathe/pkg/catalog"
)

func TestDescribeSpotPriceHistoryNewestFirstFromTheClock(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	r := New(Options{Clock: clk}).Start()
	t.Cleanup(r.Close)
	client := ec2.NewFromConfig(r.AWSConfig())
	history := func(start time.Time) []ec2types.SpotPrice {
		t.Helper()
		out, err := client.DescribeSpotPriceHistory(context.Background(), &ec2.DescribeSpotPriceHistoryInput{
			InstanceTypes: []ec2types.InstanceType{"m5.large"}, ProductDescriptions: []string{"Linux/UNIX"}, StartTime: aws.Time(start),
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.SpotPriceHistory
	}
	onDemand, _ := catalog.OnDemandPrices("us-east-1")
	// From two hours ago: both seeded entries of each zone, newest first.
	all := history(now.Add(-2 * time.Hour))
	if len(all) != 6 {
		t.Fatalf("got %d entries, want 2 per zone", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].Timestamp.After(*all[i-1].Timestamp) {
			t.Fatalf("entry %d is newer than entry %d", i, i-1)
		}
	}
	// From now: the price in effect in each zone, which differs by zone.
	current := history(now)
	if len(current) != 3 {
		t.Fatalf("got %d entries, want one per zone", len(current))
	}
	prices := map[string]string{}
	for _, p := range current {
		prices[aws.ToString(p.AvailabilityZone)] = aws.ToString(p.SpotPrice)
		if !p.Timestamp.Equal(now.Add(-time.Hour)) || p.ProductDescription != "Linux/UNIX" {
			t.Errorf("entry %+v", p)
		}
	}
	for i, z := range r.Zones() {
		want := strconv.FormatFloat(SeededSpotPrice(onDemand["m5.large"], i), 'f', 6, 64)
		if prices[z] != want {
			t.Errorf("%s price %s, want %s", z, prices[z], want)
		}
	}
	if prices["us-east-1a"] == prices["us-east-1b"] {
		t.Errorf("zones have the same price %s", prices["us-east-1a"])
	}
	// A new price now: asking from now gives it and the one it replaces, the new one first.
	clk.Step(time.Minute)
	r.SetSpotPrice("m5.large", "us-east-1a", 0.01)
	got := history(clk.Now())
	if len(got) != 4 || aws.ToString(got[0].SpotPrice) != "0.010000" || aws.ToString(got[0].AvailabilityZone) != "us-east-1a" {
		t.Fatalf("after a new price: %d entries, first %+v", len(got), got[0])
	}
}

func TestGetProductsPriceListDocuments(t *testing.T) {
	r := start(t)
	client := pricing.NewFromConfig(r.AWSConfig(), func(o *pricing.Options) { o.Region = "us-east-1" })
	term := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Field: aws.String(field), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(value)}
	}
	p := pricing.NewGetProductsPaginator(client, &pricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(100),
		Filters: []pricingtypes.Filter{
			term("regionCode", "us-east-1"), term("serviceCode", "AmazonEC2"), term("operatingSystem", "Linux"),
			term("tenancy", "Shared"), term("preInstalledSw", "NA"), term("capacitystatus", "Used"),
			term("productFamily", "Compute Instance"),
		},
	})
	got := map[string]float64{}
	pages := 0
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, doc := range out.PriceList {
			var item struct {
				Product struct {
					Attributes map[string]string `json:"attributes"`
				} `json:"product"`
				Terms struct {
					OnDemand map[string]struct {
						PriceDimensions map[string]struct {
							PricePerUnit map[string]string `json:"pricePerUnit"`
						} `json:"priceDimensions"`
					} `json:"OnDemand"`
				} `json:"terms"`
			}
			if err := json.Unmarshal([]byte(doc), &item); err != nil {
				t.Fatalf("price list item is not a JSON document: %v", err)
			}
			if item.Product.Attributes["operatingSystem"] != "Linux" {
				t.Fatalf("filtered to Linux, got %v", item.Product.Attributes)
			}
			for _, term := range item.Terms.OnDemand {
				for _, dim := range term.PriceDimensions {
					price, err := strconv.ParseFloat(dim.PricePerUnit["USD"], 64)
					if err != nil {
						t.Fatal(err)
					}
					got[item.Product.Attributes["instanceType"]] = price
				}
			}
		}
	}
	onDemand, _ := catalog.OnDemandPrices("us-east-1")
	if got["m5.large"] != onDemand["m5.large"] || pages < 2 {
		t.Fatalf("m5.large = %v in %d pages, want %v in several", got["m5.large"], pages, onDemand["m5.large"])
	}
	if _, ok := got["a1.metal"]; ok {
		t.Error("bare metal types are priced under tenancy Dedicated, not Shared")
	}
}
