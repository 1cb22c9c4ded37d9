// Package securitygroup resolves an EC2NodeClass's securityGroupSelectorTerms to the security groups they
// select, as Karpenter does: terms are ORed, the fields of a term ANDed; all id terms make one query, each
// name or tags term another. Answers are cached for a minute per set of terms.
package securitygroup

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/filters"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/ttlcache"
)

// CacheTTL is how long a resolution is reused (upstream's default cache TTL).
const CacheTTL = time.Minute

// API is the part of the EC2 client the provider calls.
type API interface {
	ec2.DescribeSecurityGroupsAPIClient
}

// Provider lists the security groups selector terms select.
type Provider struct {
	api   API
	cache *ttlcache.Cache[string, []ec2types.SecurityGroup]
}

// NewProvider returns a provider calling api, caching on clk.
func NewProvider(api API, clk clock.PassiveClock) *Provider {
	return &Provider{api: api, cache: ttlcache.New[string, []ec2types.SecurityGroup](clk, CacheTTL)}
}

// List returns the security groups any of the terms selects, each once, by ID.
func (p *Provider) List(ctx context.Context, terms []awsv1.SecurityGroupSelectorTerm) ([]ec2types.SecurityGroup, error) {
	key := filters.Key(terms)
	if cached, ok := p.cache.Get(key); ok {
		return append([]ec2types.SecurityGroup(nil), cached...), nil
	}
	byID := map[string]ec2types.SecurityGroup{}
	for _, fs := range filterSets(terms) {
		pages := ec2.NewDescribeSecurityGroupsPaginator(p.api, &ec2.DescribeSecurityGroupsInput{Filters: fs, MaxResults: aws.Int32(500)})
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing security groups, %w", err)
			}
			for _, sg := range out.SecurityGroups {
				byID[aws.ToString(sg.GroupId)] = sg
			}
		}
	}
	groups := make([]ec2types.SecurityGroup, 0, len(byID))
	for _, sg := range byID {
		groups = append(groups, sg)
	}
	sort.Slice(groups, func(i, j int) bool { return aws.ToString(groups[i].GroupId) < aws.ToString(groups[j].GroupId) })
	p.cache.Set(key, groups)
	return append([]ec2types.SecurityGroup(nil), groups...), nil
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
