package instancetype_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instancetype"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/pricing"
)

type env struct {
	fake   *fakeaws.Running
	clock  *clocktesting.FakeClock
	prices *pricing.Provider
	types  *instancetype.Provider
}

func setup(t testing.TB, mutate func(*instancetype.Options), ec2Opts ...func(*ec2.Options)) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	r := fakeaws.New(fakeaws.Options{Clock: clk}).Start()
	t.Cleanup(r.Close)
	return setupOn(r, clk, mutate, ec2Opts...)
}

// setupOn builds the providers against a running fake.
func setupOn(r *fakeaws.Running, clk *clocktesting.FakeClock, mutate func(*instancetype.Options), ec2Opts ...func(*ec2.Options)) *env {
	cfg := r.AWSConfig()
	client := ec2.NewFromConfig(cfg, ec2Opts...)
	prices := pricing.New(pricing.Options{EC2: client, Pricing: pricing.NewAPI(cfg), Region: "us-east-1", Clock: clk})
	opts := instancetype.Options{EC2: client, Prices: prices, Region: "us-east-1", Clock: clk}
	if mutate != nil {
		mutate(&opts)
	}
	return &env{fake: r, clock: clk, prices: prices, types: instancetype.New(opts)}
}

func (e *env) list(t testing.TB, nc *awsv1.EC2NodeClass) cloudprovider.InstanceTypes {
	t.Helper()
	its, err := e.types.List(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	return its
}

func byName(its cloudprovider.InstanceTypes, name string) *cloudprovider.InstanceType {
	for _, it := range its {
		if it.Name == name {
			return it
		}
	}
	return nil
}

func al2023(kubelet *awsv1.KubeletConfiguration) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, Kubelet: kubelet}}
}

func TestListPagesOnceAndCaches(t *testing.T) {
	e := setup(t, nil)
	its := e.list(t, al2023(nil))
	if len(its) != len(catalog.EC2Shapes()) {
		t.Fatalf("%d types, want every one of the catalog's %d", len(its), len(catalog.EC2Shapes()))
	}
	// At least one call per page of 100; the SDK may retry a page whose connection its transport closed
	// mid-read (aws/aws-sdk-go-v2#2737, seen here about once in 15 calls), so more is not an error.
	pages := e.fake.Faults().Calls("ec2", "DescribeInstanceTypes")
	if want := (len(its) + 99) / 100; pages < want || pages > 2*want {
		t.Fatalf("%d DescribeInstanceTypes calls, want %d pages of 100 (retries aside)", pages, want)
	}
	e.list(t, al2023(nil))
	e.clock.Step(instancetype.ListTTL)
	e.list(t, al2023(nil))
	if n := e.fake.Faults().Calls("ec2", "DescribeInstanceTypes"); n != pages {
		t.Fatalf("later Lists described the types again (%d calls)", n)
	}
	if n, want := e.fake.Faults().Calls("ec2", "DescribeInstanceTypeOfferings"), (3*len(its)+999)/1000; n < want || n > 2*want {
		t.Fatalf("%d DescribeInstanceTypeOfferings calls, want %d pages of 1000 once (retries aside)", n, want)
	}
}

// A type that a zone stops offering loses that zone's offerings once the offerings are refreshed.
func TestTypeMissingFromOfferingsInAZone(t *testing.T) {
	e := setup(t, nil)
	zones := func() []string {
		it := byName(e.list(t, nil), "m5.large")
		var out []string
		for _, o := range it.Offerings {
			if !slices.Contains(out, o.Zone) {
				out = append(out, o.Zone)
			}
		}
		slices.Sort(out)
		return out
	}
	if got := zones(); len(got) != 3 {
		t.Fatalf("m5.large zones %v, want all three", got)
	}
	e.fake.RemoveOffering("m5.large", "us-east-1b")
	if got := zones(); len(got) != 3 {
		t.Fatalf("m5.large zones %v before the refresh, want the cached three", got)
	}
	e.clock.Step(instancetype.RefreshInterval)
	if err := e.types.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := zones(); !slices.Equal(got, []string{"us-east-1a", "us-east-1c"}) {
		t.Fatalf("m5.large zones %v, want us-east-1a and us-east-1c", got)
	}
	m5 := byName(e.list(t, nil), "m5.large")
	if z := m5.Requirements.Get(v1.LabelTopologyZone); z.Has("us-east-1b") {
		t.Errorf("zone requirement %s still allows us-east-1b", z)
	}
}

// Offerings carry the pricing provider's prices (spot per zone) and the unavailable cache's verdict.
func TestOfferingsPricesAndAvailability(t *testing.T) {
	unavailable := unavailableSet{"m5.large/us-east-1a/spot": true}
	e := setup(t, func(o *instancetype.Options) { o.Unavailable = unavailable })
	if err := e.prices.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	m5 := byName(e.list(t, nil), "m5.large")
	if len(m5.Offerings) != 6 {
		t.Fatalf("%d offerings, want 3 zones × 2 capacity types", len(m5.Offerings))
	}
	for _, o := range m5.Offerings {
		var want float64
		if o.CapacityType == v1.CapacityTypeSpot {
			want, _ = e.prices.SpotPrice("m5.large", o.Zone)
		} else {
			want, _ = e.prices.OnDemandPrice("m5.large")
		}
		if o.Price != want || want == 0 {
			t.Errorf("%s/%s price %v, want %v", o.Zone, o.CapacityType, o.Price, want)
		}
		if o.Available == unavailable[m5.Name+"/"+o.Zone+"/"+o.CapacityType] {
			t.Errorf("%s/%s available = %v", o.Zone, o.CapacityType, o.Available)
		}
	}
	a, _ := e.prices.SpotPrice("m5.large", "us-east-1a")
	b, _ := e.prices.SpotPrice("m5.large", "us-east-1b")
	if a == b {
		t.Errorf("spot prices of two zones are equal (%v): not the per-zone history", a)
	}
}

type unavailableSet map[string]bool

func (u unavailableSet) IsUnavailable(it, zone, ct string) bool { return u[it+"/"+zone+"/"+ct] }

// The SDK's default of 3 attempts would leave no room beyond the two throttled ones: now and then (about
// one run in ten on 2026-12-02, never without the throttling) the attempt after them fails reading its
// response ("use of closed network connection"), which the SDK retries too. The cause is not known.
func TestThrottledDescribeCallsAreRetried(t *testing.T) {
	e := setup(t, nil, func(o *ec2.Options) { o.RetryMaxAttempts = 5 })
	e.fake.Faults().Throttle("ec2", "DescribeInstanceTypes", 2)
	e.fake.Faults().Throttle("ec2", "DescribeInstanceTypeOfferings", 2)
	if its := e.list(t, nil); len(its) == 0 {
		t.Fatal("no types")
	}
}

// The node class's kubelet settings and RESERVED_ENIS reach capacity; a change of node class is a new list.
func TestNodeClassAndReservedENIs(t *testing.T) {
	e := setup(t, func(o *instancetype.Options) { o.ReservedENIs = 1 })
	m5 := byName(e.list(t, al2023(nil)), "m5.large")
	if pods := m5.Capacity.Pods().Value(); pods != 20 { // (3 − 1) × (10 − 1) + 2
		t.Fatalf("m5.large pods %d with one reserved ENI, want 20", pods)
	}
	m5 = byName(e.list(t, al2023(&awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](110)})), "m5.large")
	if pods := m5.Capacity.Pods().Value(); pods != 110 {
		t.Fatalf("m5.large pods %d with maxPods 110", pods)
	}
}

// Start refreshes the offerings once the refresh interval has passed on the injected clock.
func TestStartRefreshesOfferings(t *testing.T) {
	e := setup(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.types.Start(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool { return e.clock.HasWaiters() })
	e.fake.RemoveOffering("c5.large", "us-east-1c")
	e.clock.Step(instancetype.RefreshInterval)
	waitFor(t, func() bool {
		return len(byName(e.list(t, nil), "c5.large").Offerings) == 4
	})
}

// waitFor polls cond (the refresher runs in its own goroutine).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Offerings are limited to the zones of the node class's resolved subnets, as upstream intersects them.
func TestOfferingsOnlyInTheNodeClassSubnetZones(t *testing.T) {
	e := setup(t, nil)
	nc := al2023(nil)
	nc.Status.Subnets = []awsv1.Subnet{{ID: "subnet-a", Zone: "us-east-1a"}, {ID: "subnet-c", Zone: "us-east-1c"}}
	m5 := byName(e.list(t, nc), "m5.large")
	for _, o := range m5.Offerings {
		if o.Zone == "us-east-1b" {
			t.Fatalf("offering in us-east-1b, where the node class has no subnet")
		}
	}
	if len(m5.Offerings) != 4 {
		t.Fatalf("%d offerings, want 2 zones × 2 capacity types", len(m5.Offerings))
	}
	if all := byName(e.list(t, al2023(nil)), "m5.large"); len(all.Offerings) != 6 {
		t.Fatalf("without resolved subnets %d offerings, want 6", len(all.Offerings))
	}
}
