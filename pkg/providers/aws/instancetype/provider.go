package instancetype

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// EC2API is what the provider calls on EC2.
type EC2API interface {
	DescribeInstanceTypes(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(context.Context, *ec2.DescribeInstanceTypeOfferingsInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
}

// Prices prices offerings (package pricing's Provider).
type Prices interface {
	OnDemandPrice(instanceType string) (float64, bool)
	SpotPrice(instanceType, zone string) (float64, bool)
}

// Unavailable says which offerings recently failed to launch (the unavailable-offerings cache).
type Unavailable interface {
	IsUnavailable(instanceType, zone, capacityType string) bool
}

// Timing, as Karpenter's AWS provider has it: type facts and offerings are refreshed every 12 hours, and a
// node class's shaped list is recomputed after 5 minutes at the latest.
const (
	RefreshInterval = 12 * time.Hour
	ListTTL         = 5 * time.Minute
)

// Options configure a Provider.
type Options struct {
	// EC2 and Prices are required.
	EC2    EC2API
	Prices Prices
	// Region the types are listed in (the topology.kubernetes.io/region label).
	Region string
	// Unavailable marks offerings Available=false; nil leaves every offering available.
	Unavailable Unavailable
	// VMMemoryOverheadPercent (VM_MEMORY_OVERHEAD_PERCENT, a fraction); 0 means the default 0.075.
	VMMemoryOverheadPercent float64
	// ReservedENIs (RESERVED_ENIS) are network interfaces the VPC CNI may not use for pods.
	ReservedENIs int
	Clock        clock.Clock
}

// capacityTypes are the capacity types every offered zone gets (reserved needs capacity reservations).
var capacityTypes = []string{v1.CapacityTypeOnDemand, v1.CapacityTypeSpot}

// Provider lists instance types. It is safe for concurrent use.
type Provider struct {
	opts Options

	// update serialises refreshes.
	update sync.Mutex

	mu sync.RWMutex
	// shapes are the region's types (sorted by name) and zones the zones offering each; the generations
	// count the changes to either, and are part of every cache key.
	shapes                    []catalog.Shape
	zones                     map[string][]string
	shapesHash, zonesHash     uint64
	shapesGen, zonesGen       uint64
	shapesLoaded, zonesLoaded bool
	shapesNext, zonesNext     time.Time
	lists                     map[string]cachedList
}

// cachedList is a node class's shaped types, with offerings that have no price or availability yet.
type cachedList struct {
	its cloudprovider.InstanceTypes
	at  time.Time
}

// New returns a provider; the first List loads the types and offerings.
func New(opts Options) *Provider {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.VMMemoryOverheadPercent == 0 {
		opts.VMMemoryOverheadPercent = catalog.DefaultVMMemoryOverheadPercent
	}
	return &Provider{opts: opts, lists: map[string]cachedList{}}
}

// List returns the instance types nodes launched from the node class would have, each with an offering per
// zone that offers it (and that one of the node class's resolved subnets is in) and capacity type, priced and marked available or not. Types no zone offers are
// left out. The types share capacity, overhead and requirements with the provider's cache: callers must not
// modify them (each List gives new offerings).
func (p *Provider) List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (cloudprovider.InstanceTypes, error) {
	if err := p.ensureLoaded(ctx); err != nil {
		return nil, err
	}
	shaped, err := p.shaped(nodeClass)
	if err != nil {
		return nil, err
	}
	out := make(cloudprovider.InstanceTypes, 0, len(shaped))
	for _, it := range shaped {
		c := *it
		c.Offerings = p.offerings(it)
		out = append(out, &c)
	}
	return out, nil
}

// offerings prices the type's offerings and marks their availability; an offering without a price is left
// out.
func (p *Provider) offerings(it *cloudprovider.InstanceType) cloudprovider.Offerings {
	out := make(cloudprovider.Offerings, 0, len(it.Offerings))
	for _, o := range it.Offerings {
		var price float64
		var ok bool
		if o.CapacityType == v1.CapacityTypeSpot {
			price, ok = p.opts.Prices.SpotPrice(it.Name, o.Zone)
		} else {
			price, ok = p.opts.Prices.OnDemandPrice(it.Name)
		}
		if !ok {
			continue
		}
		o.Price = price
		o.Available = p.opts.Unavailable == nil || !p.opts.Unavailable.IsUnavailable(it.Name, o.Zone, o.CapacityType)
		out = append(out, o)
	}
	return out
}

// shaped returns the node class's types from the cache, or computes and caches them.
func (p *Provider) shaped(nodeClass *awsv1.EC2NodeClass) (cloudprovider.InstanceTypes, error) {
	key, err := p.cacheKey(nodeClass)
	if err != nil {
		return nil, err
	}
	now := p.opts.Clock.Now()
	p.mu.RLock()
	cached, ok := p.lists[key]
	shapes, zones := p.shapes, p.zones
	p.mu.RUnlock()
	if ok && now.Sub(cached.at) < ListTTL {
		return cached.its, nil
	}
	subnetZones := subnetZonesOf(nodeClass)
	base := make(cloudprovider.InstanceTypes, 0, len(shapes))
	for i := range shapes {
		offered := zones[shapes[i].Name]
		if subnetZones != nil {
			offered = slices.DeleteFunc(slices.Clone(offered), func(z string) bool { return !subnetZones[z] })
		}
		if len(offered) == 0 {
			continue
		}
		offerings := make(cloudprovider.Offerings, 0, len(offered)*len(capacityTypes))
		for _, z := range offered {
			for _, ct := range capacityTypes {
				offerings = append(offerings, cloudprovider.Offering{Zone: z, CapacityType: ct})
			}
		}
		base = append(base, catalog.InstanceType(&shapes[i], p.opts.Region, offerings))
	}
	its := catalog.ForNodeClassWithVMOverhead(base, nodeClass, p.opts.VMMemoryOverheadPercent)
	p.mu.Lock()
	for k, c := range p.lists {
		if now.Sub(c.at) >= ListTTL {
			delete(p.lists, k)
		}
	}
	p.lists[key] = cachedList{its: its, at: now}
	p.mu.Unlock()
	return its, nil
}

// subnetZonesOf are the zones of the node class's resolved subnets, where its nodes can launch; nil (no
// restriction) while the status lists none.
func subnetZonesOf(nodeClass *awsv1.EC2NodeClass) map[string]bool {
	if nodeClass == nil || len(nodeClass.Status.Subnets) == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, s := range nodeClass.Status.Subnets {
		out[s.Zone] = true
	}
	return out
}

// cacheKey identifies what a shaped list depends on: the facts and offerings (by generation) and the parts
// of the node class that shape capacity and overhead.
func (p *Provider) cacheKey(nodeClass *awsv1.EC2NodeClass) (string, error) {
	var inputs struct {
		Family  string
		Kubelet *awsv1.KubeletConfiguration
		Devices []*awsv1.BlockDeviceMapping
		Zones   map[string]bool
	}
	if nodeClass != nil {
		inputs.Family = nodeClass.AMIFamily()
		inputs.Kubelet = nodeClass.Spec.Kubelet
		inputs.Devices = nodeClass.Spec.BlockDeviceMappings
		inputs.Zones = subnetZonesOf(nodeClass)
	}
	b, err := json.Marshal(inputs)
	if err != nil {
		return "", fmt.Errorf("hashing the node class, %w", err)
	}
	h := fnv.New64a()
	h.Write(b)
	p.mu.RLock()
	defer p.mu.RUnlock()
	return fmt.Sprintf("%d/%d/%x", p.shapesGen, p.zonesGen, h.Sum64()), nil
}

// ensureLoaded loads the types and offerings before the first List.
func (p *Provider) ensureLoaded(ctx context.Context) error {
	p.mu.RLock()
	loaded := p.shapesLoaded && p.zonesLoaded
	p.mu.RUnlock()
	if loaded {
		return nil
	}
	return p.Update(ctx)
}

// Update refreshes the type facts and offerings that are due (both, the first time). A change bumps the
// generation, which invalidates every cached list; a failure keeps what was known.
func (p *Provider) Update(ctx context.Context) error {
	p.update.Lock()
	defer p.update.Unlock()
	now := p.opts.Clock.Now()
	p.mu.RLock()
	shapesDue := !p.shapesLoaded || !now.Before(p.shapesNext)
	zonesDue := !p.zonesLoaded || !now.Before(p.zonesNext)
	p.mu.RUnlock()
	if shapesDue {
		if err := p.UpdateInstanceTypes(ctx); err != nil {
			return err
		}
	}
	if zonesDue {
		if err := p.UpdateInstanceTypeOfferings(ctx); err != nil {
			return err
		}
	}
	return nil
}

// UpdateInstanceTypes reads every HVM x86_64 and arm64 type of the region.
func (p *Provider) UpdateInstanceTypes(ctx context.Context) error {
	var shapes []catalog.Shape
	pages := ec2.NewDescribeInstanceTypesPaginator(p.opts.EC2, &ec2.DescribeInstanceTypesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("supported-virtualization-type"), Values: []string{"hvm"}},
			{Name: aws.String("processor-info.supported-architecture"), Values: []string{"x86_64", "arm64"}},
		},
		MaxResults: aws.Int32(100),
	})
	h := fnv.New64a()
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing instance types, %w", err)
		}
		for i := range page.InstanceTypes {
			shapes = append(shapes, shapeOf(&page.InstanceTypes[i], p.opts.ReservedENIs))
		}
	}
	slices.SortFunc(shapes, func(a, b catalog.Shape) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	b, err := json.Marshal(shapes)
	if err != nil {
		return fmt.Errorf("hashing instance types, %w", err)
	}
	h.Write(b)
	sum := h.Sum64()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.shapesLoaded || sum != p.shapesHash {
		p.shapes, p.shapesHash = shapes, sum
		p.shapesGen++
		p.lists = map[string]cachedList{}
	}
	p.shapesLoaded = true
	p.shapesNext = p.opts.Clock.Now().Add(RefreshInterval)
	return nil
}

// UpdateInstanceTypeOfferings reads which zones offer which types.
func (p *Provider) UpdateInstanceTypeOfferings(ctx context.Context) error {
	zones := map[string][]string{}
	pages := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.opts.EC2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		MaxResults:   aws.Int32(1000),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing instance type offerings, %w", err)
		}
		for _, o := range page.InstanceTypeOfferings {
			it := string(o.InstanceType)
			zones[it] = append(zones[it], aws.ToString(o.Location))
		}
	}
	names := make([]string, 0, len(zones))
	for it := range zones {
		slices.Sort(zones[it])
		names = append(names, it)
	}
	slices.Sort(names)
	h := fnv.New64a()
	for _, it := range names {
		fmt.Fprintf(h, "%s=%v;", it, zones[it])
	}
	sum := h.Sum64()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.zonesLoaded || sum != p.zonesHash {
		p.zones, p.zonesHash = zones, sum
		p.zonesGen++
		p.lists = map[string]cachedList{}
	}
	p.zonesLoaded = true
	p.zonesNext = p.opts.Clock.Now().Add(RefreshInterval)
	return nil
}

// Start refreshes types and offerings every RefreshInterval until ctx ends (a manager.Runnable); a failed
// refresh is retried after a minute and keeps what was known.
func (p *Provider) Start(ctx context.Context) error {
	for {
		wait := RefreshInterval
		if err := p.Update(ctx); err != nil {
			wait = retryAfterFailure
		} else {
			p.mu.RLock()
			wait = min(p.shapesNext.Sub(p.opts.Clock.Now()), p.zonesNext.Sub(p.opts.Clock.Now()))
			p.mu.RUnlock()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.opts.Clock.After(max(wait, 0)):
		}
	}
}

// retryAfterFailure is how long Start waits after a failed refresh.
const retryAfterFailure = time.Minute

// NeedLeaderElection is false: every replica keeps its own list.
func (p *Provider) NeedLeaderElection() bool { return false }
