package instancetype_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instancetype"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/pricing"
)

// BenchmarkInstanceTypes resolves the whole catalog (1,363 types, three zones, on-demand and spot) with
// offerings and prices against the fake AWS through the real SDK: cold is a new provider each time
// (DescribeInstanceTypes, DescribeInstanceTypeOfferings, GetProducts and DescribeSpotPriceHistory, then the
// shaping), cached is a List served from the node class's cached list (prices and availability applied).
func BenchmarkInstanceTypes(b *testing.B) {
	r := fakeaws.New(fakeaws.Options{}).Start()
	defer r.Close()
	cfg := r.AWSConfig()
	client := ec2.NewFromConfig(cfg)
	pricingAPI := pricing.NewAPI(cfg)
	ctx := context.Background()
	nc := al2023(nil)
	resolve := func(b *testing.B) *instancetype.Provider {
		prices := pricing.New(pricing.Options{EC2: client, Pricing: pricingAPI, Region: "us-east-1"})
		if err := prices.Update(ctx); err != nil {
			b.Fatal(err)
		}
		p := instancetype.New(instancetype.Options{EC2: client, Prices: prices, Region: "us-east-1"})
		its, err := p.List(ctx, nc)
		if err != nil || len(its) == 0 {
			b.Fatalf("listed %d types, %v", len(its), err)
		}
		return p
	}
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resolve(b)
		}
	})
	b.Run("cached", func(b *testing.B) {
		p := resolve(b)
		b.ReportAllocs()
		for b.Loop() {
			if its, err := p.List(ctx, nc); err != nil || len(its) == 0 {
				b.Fatalf("listed %d types, %v", len(its), err)
			}
		}
	})
}
