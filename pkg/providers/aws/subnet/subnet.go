// Package subnet resolves an EC2NodeClass's subnetSelectorTerms to the subnets they select, as Karpenter
// does: terms are ORed, the fields of a term ANDed; all id terms make one query, each tags term another.
// Answers are cached for a minute per set of terms.
package subnet

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/filters"
)

// CacheTTL is how long a resolution is reused (upstream's default cache TTL).
const CacheTTL = time.Minute

// API is the part of the EC2 client the provider calls.
type API interface {
	ec2.DescribeSubnetsAPIClient
}

// Provider lists the subnets selector terms select.
type Provider struct {
	resolver *filters.Resolver[ec2types.Subnet]
}

// NewProvider returns a provider calling api, caching on clk.
func NewProvider(api API, clk clock.PassiveClock) *Provider {
	describe := func(ctx context.Context, fs []ec2types.Filter) ([]ec2types.Subnet, error) {
		var out []ec2types.Subnet
		pages := ec2.NewDescribeSubnetsPaginator(api, &ec2.DescribeSubnetsInput{Filters: fs, MaxResults: aws.Int32(500)})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing subnets, %w", err)
			}
			out = append(out, page.Subnets...)
		}
		return out, nil
	}
	// The most free IP addresses first, then by ID, as the status lists them.
	compare := func(a, b ec2types.Subnet) int {
		return cmp.Or(cmp.Compare(aws.ToInt32(b.AvailableIpAddressCount), aws.ToInt32(a.AvailableIpAddressCount)),
			cmp.Compare(aws.ToString(a.SubnetId), aws.ToString(b.SubnetId)))
	}
	id := func(s ec2types.Subnet) string { return aws.ToString(s.SubnetId) }
	return &Provider{resolver: filters.NewResolver(clk, CacheTTL, describe, id, compare)}
}

// List returns the subnets any of the terms selects, each once, the most free IP addresses first (then by
// ID), as the status lists them.
func (p *Provider) List(ctx context.Context, terms []awsv1.SubnetSelectorTerm) ([]ec2types.Subnet, error) {
	return p.resolver.List(ctx, filters.Key(terms), filterSets(terms))
}

// filterSets is one query per tags term and one for all id terms.
func filterSets(terms []awsv1.SubnetSelectorTerm) [][]ec2types.Filter {
	var out [][]ec2types.Filter
	var ids []string
	for _, t := range terms {
		if t.ID != "" {
			ids = append(ids, t.ID)
			continue
		}
		out = append(out, filters.Tags(t.Tags))
	}
	if len(ids) > 0 {
		out = append(out, []ec2types.Filter{filters.One("subnet-id", ids...)})
	}
	return out
}

// Describe writes the terms as a status message names them: "tags karpenter.sh/discovery=demo or id
// subnet-0abc".
func Describe(terms []awsv1.SubnetSelectorTerm) string {
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		if t.ID != "" {
			parts = append(parts, "id "+t.ID)
		} else {
			parts = append(parts, filters.DescribeTags(t.Tags))
		}
	}
	return strings.Join(parts, " or ")
}
