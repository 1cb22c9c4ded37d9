// Package securitygroup resolves an EC2NodeClass's securityGroupSelectorTerms to the security groups they
// select, as Karpenter does: terms are ORed, the fields of a term ANDed; all id terms make one query, each
// name or tags term another. Answers are cached for a minute per set of terms.
package securitygroup

import (
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
	ec2.DescribeSecurityGroupsAPIClient
}

// Provider lists the security groups selector terms select.
type Provider struct {
	resolver *filters.Resolver[ec2types.SecurityGroup]
}

// NewProvider returns a provider calling api, caching on clk.
func NewProvider(api API, clk clock.PassiveClock) *Provider {
	describe := func(ctx context.Context, fs []ec2types.Filter) ([]ec2types.SecurityGroup, error) {
		var out []ec2types.SecurityGroup
		pages := ec2.NewDescribeSecurityGroupsPaginator(api, &ec2.DescribeSecurityGroupsInput{Filters: fs, MaxResults: aws.Int32(500)})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing security groups, %w", err)
			}
			out = append(out, page.SecurityGroups...)
		}
		return out, nil
	}
	id := func(sg ec2types.SecurityGroup) string { return aws.ToString(sg.GroupId) }
	compare := func(a, b ec2types.SecurityGroup) int { return strings.Compare(id(a), id(b)) }
	return &Provider{resolver: filters.NewResolver(clk, CacheTTL, describe, id, compare)}
}

// List returns the security groups any of the terms selects, each once, by ID.
func (p *Provider) List(ctx context.Context, terms []awsv1.SecurityGroupSelectorTerm) ([]ec2types.SecurityGroup, error) {
	return p.resolver.List(ctx, filters.Key(terms), filterSets(terms))
}

func filterSets(terms []awsv1.SecurityGroupSelectorTerm) [][]ec2types.Filter {
	var out [][]ec2types.Filter
	var ids []string
	for _, t := range terms {
		switch {
		case t.ID != "":
			ids = append(ids, t.ID)
		case t.Name != "":
			out = append(out, append([]ec2types.Filter{filters.One("group-name", t.Name)}, filters.Tags(t.Tags)...))
		default:
			out = append(out, filters.Tags(t.Tags))
		}
	}
	if len(ids) > 0 {
		out = append(out, []ec2types.Filter{filters.One("group-id", ids...)})
	}
	return out
}

// Describe writes the terms as a status message names them: "tags karpenter.sh/discovery=demo or name web".
func Describe(terms []awsv1.SecurityGroupSelectorTerm) string {
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		switch {
		case t.ID != "":
			parts = append(parts, "id "+t.ID)
		case t.Name != "":
			parts = append(parts, "name "+t.Name)
		default:
			parts = append(parts, filters.DescribeTags(t.Tags))
		}
	}
	return strings.Join(parts, " or ")
}
