package pricing

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"k8s.io/utils/clock"

	"github.com/lathe-autoscaler/lathe/pkg/catalog"
)

// EC2API is what the provider calls on EC2.
type EC2API interface {
	DescribeSpotPriceHistory(context.Context, *ec2.DescribeSpotPriceHistoryInput, ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
}

// API is what the provider calls on the Pricing API.
type API interface {
	GetProducts(context.Context, *pricing.GetProductsInput, ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
}

// NewAPI returns a Pricing API client for cfg. The API has endpoints in a few regions only, so the client
// uses the nearest (ap-south-1 for ap-*, eu-central-1 for eu-*, cn-northwest-1 for China, else us-east-1),
// as Karpenter's AWS provider does; an endpoint set in cfg, as for the fake, wins.
func NewAPI(cfg aws.Config) *pricing.Client {
	return pricing.NewFromConfig(cfg, func(o *pricing.Options) { o.Region = endpointRegion(cfg.Region) })
}

func endpointRegion(region string) string {
	switch {
	case strings.HasPrefix(region, "ap-"):
		return "ap-south-1"
	case strings.HasPrefix(region, "eu-"):
		return "eu-central-1"
	case strings.HasPrefix(region, "cn-"):
		return "cn-northwest-1"
	}
	return "us-east-1"
}

// Refresh timing: prices are refreshed every RefreshInterval (Karpenter's AWS provider refreshes both kinds
// every 12 hours); a failed refresh is retried after backoffBase, doubled per consecutive failure up to
// the refresh interval.
const (
	RefreshInterval = 12 * time.Hour
	backoffBase     = 30 * time.Second
)

// Options configure a Provider.
type Options struct {
	EC2     EC2API
	Pricing API
	// Region whose prices are kept.
	Region string
	// IsolatedVPC (ISOLATED_VPC): the Pricing and EC2 price APIs are unreachable; only embedded prices are used.
	IsolatedVPC bool
	Clock       clock.Clock
}

// Provider keeps the prices. It is safe for concurrent use.
type Provider struct {
	opts Options

	// update serialises refreshes.
	update sync.Mutex

	mu sync.RWMutex
	// onDemand and spot are the prices the APIs gave (type → price; type → zone → price); a refresh adds to
	// and updates them, so a type a later answer lacks keeps its last price.
	onDemand map[string]float64
	spot     map[string]map[string]float64
	// embedded are the catalog's on-demand prices of the region (empty when it has none).
	embedded             map[string]float64
	onDemandDue, spotDue refresh
}

// refresh is when a source is next due and how many refreshes in a row failed.
type refresh struct {
	next     time.Time
	failures int
	err      error
}

// New returns a provider answering with the embedded prices until the first refresh.
func New(opts Options) *Provider {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	embedded, err := catalog.OnDemandPrices(opts.Region)
	if err != nil {
		embedded = map[string]float64{}
	}
	return &Provider{opts: opts, embedded: embedded, spot: map[string]map[string]float64{}}
}

// OnDemandPrice is the type's on-demand hourly price: the Pricing API's, else the embedded one.
func (p *Provider) OnDemandPrice(instanceType string) (float64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if price, ok := p.onDemand[instanceType]; ok {
		return price, true
	}
	price, ok := p.embedded[instanceType]
	return price, ok
}

// SpotPrice is the type's spot price in the zone: the newest from the spot price history, else the embedded
// catalog's spot model (a fixed share of the on-demand price).
func (p *Provider) SpotPrice(instanceType, zone string) (float64, bool) {
	p.mu.RLock()
	price, ok := p.spot[instanceType][zone]
	p.mu.RUnlock()
	if ok {
		return price, true
	}
	onDemand, ok := p.OnDemandPrice(instanceType)
	return onDemand * catalog.DefaultSpotPriceFraction, ok
}

// Update refreshes the sources that are due (all of them on the first call) and returns their errors. A
// failed source keeps its previous prices and is retried after a backoff. With IsolatedVPC it does nothing.
func (p *Provider) Update(ctx context.Context) error {
	if p.opts.IsolatedVPC {
		return nil
	}
	p.update.Lock()
	defer p.update.Unlock()
	now := p.opts.Clock.Now()
	var errs []error
	// The Pricing API does not serve GovCloud: there the embedded on-demand prices stay, as upstream.
	if !now.Before(p.due(&p.onDemandDue)) && !strings.HasPrefix(p.opts.Region, "us-gov-") {
		prices, err := p.fetchOnDemand(ctx)
		p.settle(&p.onDemandDue, err, func() {
			if p.onDemand == nil {
				p.onDemand = map[string]float64{}
			}
			for it, price := range prices {
				p.onDemand[it] = price
			}
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	if !now.Before(p.due(&p.spotDue)) {
		prices, err := p.fetchSpot(ctx)
		p.settle(&p.spotDue, err, func() {
			for it, zones := range prices {
				if p.spot[it] == nil {
					p.spot[it] = map[string]float64{}
				}
				for z, price := range zones {
					p.spot[it][z] = price
				}
			}
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("refreshing prices, %w", joinErrors(errs))
	}
	return nil
}

// NextUpdate is when Update next has something to do (zero time with IsolatedVPC: never).
func (p *Provider) NextUpdate() time.Time {
	if p.opts.IsolatedVPC {
		return time.Time{}
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	next := p.onDemandDue.next
	if p.spotDue.next.Before(next) {
		next = p.spotDue.next
	}
	return next
}

func (p *Provider) due(r *refresh) time.Time {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return r.next
}

// settle records a refresh's outcome: on success apply runs and the next refresh is an interval away; on
// failure the prices stay and the next try backs off.
func (p *Provider) settle(r *refresh, err error, apply func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Clock.Now()
	r.err = err
	if err != nil {
		r.failures++
		r.next = now.Add(backoff(r.failures))
		return
	}
	apply()
	r.failures = 0
	r.next = now.Add(RefreshInterval)
}

func backoff(failures int) time.Duration {
	d := backoffBase
	for i := 1; i < failures && d < RefreshInterval; i++ {
		d *= 2
	}
	return min(d, RefreshInterval)
}

// Start refreshes the prices until ctx ends: at once, then whenever a source is due (a manager.Runnable).
func (p *Provider) Start(ctx context.Context) error {
	if p.opts.IsolatedVPC {
		<-ctx.Done()
		return nil
	}
	for {
		_ = p.Update(ctx) // failures back off and keep the previous prices
		wait := p.NextUpdate().Sub(p.opts.Clock.Now())
		select {
		case <-ctx.Done():
			return nil
		case <-p.opts.Clock.After(max(wait, 0)):
		}
	}
}

// NeedLeaderElection is false: every replica keeps its own prices.
func (p *Provider) NeedLeaderElection() bool { return false }

// fetchOnDemand reads the region's Linux on-demand prices: shared tenancy for virtualised types and
// dedicated for bare metal, which the Pricing API lists only that way.
func (p *Provider) fetchOnDemand(ctx context.Context) (map[string]float64, error) {
	shared, err := p.products(ctx, term("tenancy", "Shared"), term("productFamily", "Compute Instance"))
	if err != nil {
		return nil, err
	}
	metal, err := p.products(ctx, term("tenancy", "Dedicated"), term("productFamily", "Compute Instance (bare metal)"))
	if err != nil {
		return nil, err
	}
	if len(shared) == 0 || len(metal) == 0 {
		return nil, fmt.Errorf("getting on-demand prices, the price list has none for %s", p.opts.Region)
	}
	for it, price := range metal {
		if strings.Contains(it, ".metal") {
			shared[it] = price
		}
	}
	return shared, nil
}

func term(field, value string) pricingtypes.Filter {
	return pricingtypes.Filter{Field: aws.String(field), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(value)}
}

// products pages through GetProducts with the common filters and the extra ones.
func (p *Provider) products(ctx context.Context, extra ...pricingtypes.Filter) (map[string]float64, error) {
	filters := append([]pricingtypes.Filter{
		term("serviceCode", "AmazonEC2"), term("regionCode", p.opts.Region), term("operatingSystem", "Linux"),
		term("preInstalledSw", "NA"), term("capacitystatus", "Used"), term("marketoption", "OnDemand"),
	}, extra...)
	currency := "USD"
	if strings.HasPrefix(p.opts.Region, "cn-") {
		currency = "CNY"
	}
	out := map[string]float64{}
	pages := pricing.NewGetProductsPaginator(p.opts.Pricing, &pricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"), Filters: filters, MaxResults: aws.Int32(100),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("getting on-demand prices, %w", err)
		}
		for _, doc := range page.PriceList {
			it, price, ok := onDemandPriceOf(doc, currency)
			if ok {
				out[it] = price
			}
		}
	}
	return out, nil
}

// priceListItem is the part of a price-list document the provider reads.
type priceListItem struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// onDemandPriceOf reads a price-list document's instance type and positive hourly price in the currency.
func onDemandPriceOf(doc, currency string) (string, float64, bool) {
	var item priceListItem
	if err := json.Unmarshal([]byte(doc), &item); err != nil || item.Product.Attributes.InstanceType == "" {
		return "", 0, false
	}
	for _, term := range item.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			price, err := strconv.ParseFloat(dim.PricePerUnit[currency], 64)
			if err == nil && price > 0 {
				return item.Product.Attributes.InstanceType, price, true
			}
		}
	}
	return "", 0, false
}

// fetchSpot reads the spot prices in effect now, keeping the newest entry per type and zone.
func (p *Provider) fetchSpot(ctx context.Context) (map[string]map[string]float64, error) {
	type stamped struct {
		price float64
		at    time.Time
	}
	newest := map[string]map[string]stamped{}
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(p.opts.EC2, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
		StartTime:           aws.Time(p.opts.Clock.Now()),
		MaxResults:          aws.Int32(1000),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("getting spot prices, %w", err)
		}
		for _, e := range page.SpotPriceHistory {
			price, err := strconv.ParseFloat(aws.ToString(e.SpotPrice), 64)
			if err != nil || e.Timestamp == nil {
				continue
			}
			it, zone := string(e.InstanceType), aws.ToString(e.AvailabilityZone)
			if newest[it] == nil {
				newest[it] = map[string]stamped{}
			}
			if have, ok := newest[it][zone]; ok && !e.Timestamp.After(have.at) {
				continue
			}
			newest[it][zone] = stamped{price: price, at: *e.Timestamp}
		}
	}
	if len(newest) == 0 {
		return nil, fmt.Errorf("getting spot prices, the history lists none")
	}
	out := make(map[string]map[string]float64, len(newest))
	for it, zones := range newest {
		out[it] = make(map[string]float64, len(zones))
		for z, s := range zones {
			out[it][z] = s.price
		}
	}
	return out, nil
}

func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return fmt.Errorf("%w; %w", errs[0], errs[1])
}
