package pricing_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/pricing"
)

var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func setup(t *testing.T, isolated bool) (*fakeaws.Running, *pricing.Provider, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(start)
	r := fakeaws.New(fakeaws.Options{Clock: clk}).Start()
	t.Cleanup(r.Close)
	cfg := r.AWSConfig()
	p := pricing.New(pricing.Options{
		EC2: ec2.NewFromConfig(cfg), Pricing: pricing.NewAPI(cfg), Region: "us-east-1", IsolatedVPC: isolated, Clock: clk,
	})
	return r, p, clk
}

func embedded(t *testing.T, it string) float64 {
	t.Helper()
	prices, err := catalog.OnDemandPrices("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	return prices[it]
}

func TestOnDemandFromThePricingAPI(t *testing.T) {
	r, p, _ := setup(t, false)
	r.SetOnDemandPrice("m5.large", 0.5)
	r.SetOnDemandPrice("m5.metal", 7)
	if err := p.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.OnDemandPrice("m5.large"); got != 0.5 {
		t.Errorf("m5.large = %v, want the API's 0.5", got)
	}
	if got, _ := p.OnDemandPrice("m5.metal"); got != 7 {
		t.Errorf("m5.metal = %v, want the API's 7 (dedicated tenancy, bare metal)", got)
	}
	if n := r.Faults().Calls("pricing", "GetProducts"); n < 10 {
		t.Errorf("%d GetProducts calls: the price list should come in pages of 100", n)
	}
}

// The newest entry of each zone wins, whatever order the history lists them in.
func TestSpotNewestPerZone(t *testing.T) {
	r, p, clk := setup(t, false)
	clk.Step(time.Minute)
	r.SetSpotPrice("m5.large", "us-east-1a", 0.0123)
	if err := p.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.SpotPrice("m5.large", "us-east-1a"); got != 0.0123 {
		t.Errorf("us-east-1a = %v, want the newest 0.0123", got)
	}
	want := fakeaws.SeededSpotPrice(embedded(t, "m5.large"), 1)
	if got, _ := p.SpotPrice("m5.large", "us-east-1b"); got < want-1e-6 || got > want+1e-6 {
		t.Errorf("us-east-1b = %v, want %v", got, want)
	}
}

func TestFallbackAndKeepingPricesOnErrors(t *testing.T) {
	r, p, clk := setup(t, false)
	ctx := context.Background()
	r.Faults().Fail("pricing", "GetProducts", "AccessDeniedException", "not allowed", http.StatusForbidden, -1)
	r.Faults().Fail("ec2", "DescribeSpotPriceHistory", "UnauthorizedOperation", "not allowed", http.StatusForbidden, -1)
	if err := p.Update(ctx); err == nil {
		t.Fatal("Update should report the failures")
	}
	if got, _ := p.OnDemandPrice("m5.large"); got != embedded(t, "m5.large") {
		t.Errorf("on-demand fallback = %v, want the embedded %v", got, embedded(t, "m5.large"))
	}
	if got, _ := p.SpotPrice("m5.large", "us-east-1a"); got != embedded(t, "m5.large")*catalog.DefaultSpotPriceFraction {
		t.Errorf("spot fallback = %v, want the catalog's spot model", got)
	}
	// Backing off: no call before the backoff has passed.
	calls := r.Faults().Calls("pricing", "GetProducts")
	if err := p.Update(ctx); err != nil || r.Faults().Calls("pricing", "GetProducts") != calls {
		t.Fatalf("Update during the backoff called the API (err %v)", err)
	}
	r.Faults().Clear()
	r.SetOnDemandPrice("m5.large", 0.5)
	clk.Step(time.Minute)
	if err := p.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.OnDemandPrice("m5.large"); got != 0.5 {
		t.Fatalf("after recovering m5.large = %v, want 0.5", got)
	}
	// A later failure keeps what the last refresh gave.
	r.Faults().Fail("pricing", "GetProducts", "ThrottlingException", "slow down", http.StatusBadRequest, -1)
	clk.Step(pricing.RefreshInterval)
	if err := p.Update(ctx); err == nil {
		t.Fatal("Update should report the failure")
	}
	if got, _ := p.OnDemandPrice("m5.large"); got != 0.5 {
		t.Fatalf("after a failed refresh m5.large = %v, want the previous 0.5", got)
	}
}

func TestIsolatedVPCMakesNoCalls(t *testing.T) {
	r, p, clk := setup(t, true)
	for range 3 {
		if err := p.Update(context.Background()); err != nil {
			t.Fatal(err)
		}
		clk.Step(pricing.RefreshInterval)
	}
	if n := r.Faults().Calls("pricing", "GetProducts") + r.Faults().Calls("ec2", "DescribeSpotPriceHistory"); n != 0 {
		t.Fatalf("%d price calls with ISOLATED_VPC", n)
	}
	if got, ok := p.OnDemandPrice("m5.large"); !ok || got != embedded(t, "m5.large") {
		t.Fatalf("m5.large = %v, want the embedded price", got)
	}
}

func TestThrottlingIsRetried(t *testing.T) {
	r, p, _ := setup(t, false)
	r.SetOnDemandPrice("m5.large", 0.5)
	r.Faults().Throttle("pricing", "GetProducts", 2)
	r.Faults().Throttle("ec2", "DescribeSpotPriceHistory", 2)
	if err := p.Update(context.Background()); err != nil {
		t.Fatalf("throttled calls should be retried: %v", err)
	}
	if got, _ := p.OnDemandPrice("m5.large"); got != 0.5 {
		t.Fatalf("m5.large = %v, want 0.5", got)
	}
}

// Start refreshes again once the interval has passed on the injected clock.
func TestStartRefreshesPeriodically(t *testing.T) {
	r, p, clk := setup(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Start(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool { return clk.HasWaiters() })
	first := r.Faults().Calls("ec2", "DescribeSpotPriceHistory")
	r.SetOnDemandPrice("m5.large", 0.75)
	clk.Step(pricing.RefreshInterval)
	waitFor(t, func() bool { got, _ := p.OnDemandPrice("m5.large"); return got == 0.75 })
	waitFor(t, func() bool { return r.Faults().Calls("ec2", "DescribeSpotPriceHistory") > first })
}

// waitFor polls cond (the refresher runs in its own goroutine).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// GovCloud has no Pricing API: on-demand prices stay the embedded ones, spot prices still come from EC2.
func TestGovCloudSkipsThePricingAPI(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	r := fakeaws.New(fakeaws.Options{Region: "us-gov-west-1", Clock: clk}).Start()
	t.Cleanup(r.Close)
	cfg := r.AWSConfig()
	p := pricing.New(pricing.Options{EC2: ec2.NewFromConfig(cfg), Pricing: pricing.NewAPI(cfg), Region: "us-gov-west-1", Clock: clk})
	if err := p.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := r.Faults().Calls("pricing", "GetProducts"); n != 0 {
		t.Fatalf("%d GetProducts calls in GovCloud", n)
	}
	if n := r.Faults().Calls("ec2", "DescribeSpotPriceHistory"); n == 0 {
		t.Fatal("no spot price calls")
	}
	gov, err := catalog.OnDemandPrices("us-gov-west-1")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := p.OnDemandPrice("m5.large"); !ok || got != gov["m5.large"] {
		t.Fatalf("m5.large = %v, want the embedded GovCloud price %v", got, gov["m5.large"])
	}
}
