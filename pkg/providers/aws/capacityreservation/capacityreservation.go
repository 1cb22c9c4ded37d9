// Package capacityreservation resolves an EC2NodeClass's capacityReservationSelectorTerms to the active
// capacity reservations they select, as Karpenter does: an id term is one query; a term with tags, owner or
// match criteria another; every query asks only for active reservations. Answers are cached for a minute per
// query. It also keeps each reservation's available instance count (from EC2's answers, less Lathe's launches
// since) for the reserved offerings.
package capacityreservation

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/filters"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/ttlcache"
)

// CacheTTL is how long a query's answer is reused.
const CacheTTL = time.Minute

// API is the part of the EC2 client the provider calls.
type API interface {
	ec2.DescribeCapacityReservationsAPIClient
}

// Provider lists the capacity reservations selector terms select.
type Provider struct {
	api       API
	cache     *ttlcache.Cache[string, []ec2types.CapacityReservation]
	available availability
}

// NewProvider returns a provider calling api, caching on clk.
func NewProvider(api API, clk clock.PassiveClock) *Provider {
	return &Provider{api: api, cache: ttlcache.New[string, []ec2types.CapacityReservation](clk, CacheTTL)}
}

// query is one DescribeCapacityReservations call.
type query struct {
	ID, OwnerID, InstanceMatchCriteria string
	Tags                               map[string]string
}

func queries(terms []awsv1.CapacityReservationSelectorTerm) []query {
	var out []query
	for _, t := range terms {
		if t.ID != "" {
			out = append(out, query{ID: t.ID})
		}
		if len(t.Tags) > 0 || t.InstanceMatchCriteria != "" {
			out = append(out, query{OwnerID: t.OwnerID, Tags: t.Tags, InstanceMatchCriteria: t.InstanceMatchCriteria})
		}
	}
	return out
}

func (q query) input() *ec2.DescribeCapacityReservationsInput {
	fs := []ec2types.Filter{filters.One("state", string(ec2types.CapacityReservationStateActive))}
	if q.ID != "" {
		return &ec2.DescribeCapacityReservationsInput{Filters: fs, CapacityReservationIds: []string{q.ID}}
	}
	if q.OwnerID != "" {
		fs = append(fs, filters.One("owner-id", q.OwnerID))
	}
	fs = append(fs, filters.Tags(q.Tags)...)
	if q.InstanceMatchCriteria != "" {
		fs = append(fs, filters.One("instance-match-criteria", q.InstanceMatchCriteria))
	}
	return &ec2.DescribeCapacityReservationsInput{Filters: fs, MaxResults: aws.Int32(1000)}
}

// List returns the active reservations any term selects, each once, by ID.
func (p *Provider) List(ctx context.Context, terms []awsv1.CapacityReservationSelectorTerm) ([]ec2types.CapacityReservation, error) {
	byID := map[string]ec2types.CapacityReservation{}
	for _, q := range queries(terms) {
		found, err := p.query(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, r := range found {
			byID[aws.ToString(r.CapacityReservationId)] = r
		}
	}
	out := make([]ec2types.CapacityReservation, 0, len(byID))
	for _, r := range byID {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		return aws.ToString(out[i].CapacityReservationId) < aws.ToString(out[j].CapacityReservationId)
	})
	return out, nil
}

func (p *Provider) query(ctx context.Context, q query) ([]ec2types.CapacityReservation, error) {
	key := filters.Key(q)
	if cached, ok := p.cache.Get(key); ok {
		return cached, nil
	}
	var found []ec2types.CapacityReservation
	pages := ec2.NewDescribeCapacityReservationsPaginator(p.api, q.input())
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing capacity reservations, %w", err)
		}
		found = append(found, out.CapacityReservations...)
	}
	p.cache.Set(key, found)
	p.available.sync(found)
	return found, nil
}

// Status converts a reservation to its status entry, as Karpenter records it: capacity blocks are "expiring"
// from 40 minutes before their end. An unknown match criteria or type is an error.
func Status(r ec2types.CapacityReservation, now time.Time) (awsv1.CapacityReservation, error) {
	out := awsv1.CapacityReservation{
		AvailabilityZone:      aws.ToString(r.AvailabilityZone),
		ID:                    aws.ToString(r.CapacityReservationId),
		InstanceMatchCriteria: string(r.InstanceMatchCriteria),
		InstanceType:          aws.ToString(r.InstanceType),
		Interruptible:         aws.ToBool(r.Interruptible),
		OwnerID:               aws.ToString(r.OwnerId),
		ReservationType:       string(r.ReservationType),
		State:                 StateActive,
	}
	if out.ReservationType == "" {
		out.ReservationType = "default"
	}
	switch out.InstanceMatchCriteria {
	case "open", "targeted":
	default:
		return out, fmt.Errorf("capacity reservation %s has unsupported instance match criteria %q", out.ID, out.InstanceMatchCriteria)
	}
	switch out.ReservationType {
	case "default", "capacity-block":
	default:
		return out, fmt.Errorf("capacity reservation %s has unsupported reservation type %q", out.ID, out.ReservationType)
	}
	if r.EndDate != nil {
		end := metav1Time(*r.EndDate)
		out.EndTime = &end
		if out.ReservationType == "capacity-block" && !now.Before(r.EndDate.Add(-expiringWindow)) {
			out.State = StateExpiring
		}
	}
	return out, nil
}
