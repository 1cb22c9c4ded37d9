package ami

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/filters"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/ttlcache"
)

// Cache lifetimes, as upstream's.
const (
	ImagesTTL          = time.Minute
	PublicParameterTTL = 24 * time.Hour
	CustomParameterTTL = 5 * time.Minute
)

// EC2API and SSMAPI are the parts of the EC2 and SSM clients the provider calls.
type (
	EC2API interface {
		ec2.DescribeImagesAPIClient
	}
	SSMAPI interface {
		GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
	}
)

// Version returns the cluster's Kubernetes version as major.minor ("1.37").
type Version func(ctx context.Context) (string, error)

// AMI is a resolved image and the instance requirements it serves.
type AMI struct {
	ID           string
	Name         string
	CreationDate time.Time
	Deprecated   bool
	// Requirements, sorted by key length then key, as the status lists them.
	Requirements []corev1.NodeSelectorRequirement
}

// NoAliasImagesError is an alias none of whose SSM parameters exist for the cluster's version.
type NoAliasImagesError struct {
	Alias      Alias
	Kubernetes string
}

func (e *NoAliasImagesError) Error() string {
	return fmt.Sprintf("failed to discover any AMIs for alias %s: no SSM parameter for Kubernetes %s", e.Alias, e.Kubernetes)
}

// Provider resolves amiSelectorTerms.
type Provider struct {
	ec2     EC2API
	ssm     SSMAPI
	version Version
	clock   clock.PassiveClock
	images  *ttlcache.Cache[string, []AMI]
	params  *ttlcache.Cache[string, parameterValue]
}

// parameterValue is a cached SSM value; a mutable one (an alias's "latest"/"recommended") moves with new
// releases.
type parameterValue struct {
	value   string
	mutable bool
}

// NewProvider returns a provider calling the EC2 and SSM APIs, asking version for the cluster's Kubernetes
// version when it resolves an alias.
func NewProvider(ec2api EC2API, ssmapi SSMAPI, version Version, clk clock.PassiveClock) *Provider {
	return &Provider{
		ec2: ec2api, ssm: ssmapi, version: version, clock: clk,
		images: ttlcache.New[string, []AMI](clk, ImagesTTL),
		params: ttlcache.New[string, parameterValue](clk, PublicParameterTTL),
	}
}

// query is one DescribeImages call and what is known of the images it finds beyond their architecture.
type query struct {
	Filters []ec2types.Filter
	Owners  []string
	// Known are the requirement sets an image ID serves (alias images), beside its architecture.
	Known map[string][][]corev1.NodeSelectorRequirement
}

// List returns the images the node class's terms select, the newest first: for each requirement set the
// newest non-deprecated image (a deprecated one only when no other serves the set).
func (p *Provider) List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) ([]AMI, error) {
	queries, err := p.queries(ctx, nodeClass)
	if err != nil {
		return nil, err
	}
	key := filters.Key(queries)
	if cached, ok := p.images.Get(key); ok {
		return append([]AMI(nil), cached...), nil
	}
	best := map[string]AMI{}
	for _, q := range queries {
		if err := p.describe(ctx, q, best); err != nil {
			return nil, err
		}
	}
	out := make([]AMI, 0, len(best))
	for _, a := range best {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreationDate.Equal(out[j].CreationDate) {
			return out[i].CreationDate.After(out[j].CreationDate)
		}
		return out[i].ID < out[j].ID
	})
	p.images.Set(key, out)
	return append([]AMI(nil), out...), nil
}

func (p *Provider) queries(ctx context.Context, nodeClass *awsv1.EC2NodeClass) ([]query, error) {
	if alias, ok := ParseAlias(nodeClass); ok {
		q, err := p.aliasQuery(ctx, alias)
		if err != nil {
			return nil, err
		}
		return []query{q}, nil
	}
	var out []query
	var ids []string
	for _, t := range nodeClass.Spec.AMISelectorTerms {
		switch {
		case t.ID != "":
			ids = append(ids, t.ID)
		case t.SSMParameter != "":
			id, err := p.parameter(ctx, t.SSMParameter, CustomParameterTTL, false)
			if isParameterNotFound(err) || (err == nil && !strings.HasPrefix(id, "ami-")) {
				continue
			}
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		default:
			q := query{Filters: filters.Tags(t.Tags)}
			if t.Owner != "" {
				q.Owners = []string{t.Owner}
			}
			if t.Name != "" {
				q.Filters = append([]ec2types.Filter{filters.One("name", t.Name)}, q.Filters...)
				if t.Owner == "" {
					q.Owners = []string{"self", "amazon"}
				}
			}
			out = append(out, q)
		}
	}
	if len(ids) > 0 {
		out = append(out, query{Filters: []ec2types.Filter{filters.One("image-id", ids...)}})
	}
	return out, nil
}

func (p *Provider) aliasQuery(ctx context.Context, alias Alias) (query, error) {
	k8s, err := p.version(ctx)
	if err != nil {
		return query{}, fmt.Errorf("getting the kubernetes version, %w", err)
	}
	params, err := alias.parameters(k8s)
	if err != nil {
		return query{}, err
	}
	q := query{Known: map[string][][]corev1.NodeSelectorRequirement{}}
	var ids []string
	for _, param := range params {
		id, err := p.parameter(ctx, param.path, PublicParameterTTL, alias.Version == Latest)
		if isParameterNotFound(err) {
			continue
		}
		if err != nil {
			return query{}, err
		}
		if _, seen := q.Known[id]; !seen {
			ids = append(ids, id)
		}
		q.Known[id] = append(q.Known[id], param.reqs...)
	}
	if len(ids) == 0 {
		return query{}, &NoAliasImagesError{Alias: alias, Kubernetes: k8s}
	}
	sort.Strings(ids)
	q.Filters = []ec2types.Filter{filters.One("image-id", ids...)}
	return q, nil
}

func (p *Provider) parameter(ctx context.Context, name string, ttl time.Duration, mutable bool) (string, error) {
	if v, ok := p.params.Get(name); ok {
		return v.value, nil
	}
	out, err := p.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("getting ssm parameter %s, %w", name, err)
	}
	v := aws.ToString(out.Parameter.Value)
	p.params.SetFor(name, parameterValue{value: v, mutable: mutable}, ttl)
	return v, nil
}

func isParameterNotFound(err error) bool {
	var nf *ssmtypes.ParameterNotFound
	return errors.As(err, &nf)
}

// kubeArchitectures maps EC2's architecture names to Kubernetes'.
var kubeArchitectures = map[ec2types.ArchitectureValues]string{
	ec2types.ArchitectureValuesX8664: "amd64",
	ec2types.ArchitectureValuesArm64: "arm64",
}

// describe runs one query and keeps, per requirement set, the better of the image found and best's.
func (p *Provider) describe(ctx context.Context, q query, best map[string]AMI) error {
	in := &ec2.DescribeImagesInput{
		Filters:           append(append([]ec2types.Filter(nil), q.Filters...), filters.One("state", string(ec2types.ImageStateAvailable))),
		Owners:            q.Owners,
		IncludeDeprecated: aws.Bool(true),
		MaxResults:        aws.Int32(1000),
	}
	now := p.clock.Now()
	pages := ec2.NewDescribeImagesPaginator(p.ec2, in)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing images, %w", err)
		}
		for _, img := range out.Images {
			arch, ok := kubeArchitectures[img.Architecture]
			if !ok {
				continue
			}
			for _, reqs := range requirementSets(q, aws.ToString(img.ImageId), arch) {
				candidate := AMI{
					ID: aws.ToString(img.ImageId), Name: aws.ToString(img.Name), Requirements: reqs,
					CreationDate: parseTime(aws.ToString(img.CreationDate), time.Time{}),
				}
				if deprecation := aws.ToString(img.DeprecationTime); deprecation != "" {
					candidate.Deprecated = !parseTime(deprecation, now.Add(time.Hour)).After(now)
				}
				key := requirementsKey(reqs)
				if held, ok := best[key]; !ok || better(candidate, held) {
					best[key] = candidate
				}
			}
		}
	}
	return nil
}

// requirementSets are the sets an image serves: each known set plus its architecture, or its architecture
// alone.
func requirementSets(q query, id, arch string) [][]corev1.NodeSelectorRequirement {
	archReq := corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}
	known := q.Known[id]
	if len(known) == 0 {
		return [][]corev1.NodeSelectorRequirement{{archReq}}
	}
	out := make([][]corev1.NodeSelectorRequirement, 0, len(known))
	for _, reqs := range known {
		set := append(append([]corev1.NodeSelectorRequirement(nil), reqs...), archReq)
		sort.Slice(set, func(i, j int) bool {
			if len(set[i].Key) != len(set[j].Key) {
				return len(set[i].Key) < len(set[j].Key)
			}
			return set[i].Key < set[j].Key
		})
		out = append(out, set)
	}
	return out
}

func requirementsKey(reqs []corev1.NodeSelectorRequirement) string {
	parts := make([]string, 0, len(reqs))
	for _, r := range reqs {
		values := append([]string(nil), r.Values...)
		sort.Strings(values)
		parts = append(parts, r.Key+" "+string(r.Operator)+" "+strings.Join(values, ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// better reports whether a should replace b: a non-deprecated image beats a deprecated one, then the newer
// creation date wins, then the greater name.
func better(a, b AMI) bool {
	if a.Deprecated != b.Deprecated {
		return !a.Deprecated
	}
	if !a.CreationDate.Equal(b.CreationDate) {
		return a.CreationDate.After(b.CreationDate)
	}
	return a.Name > b.Name
}

func parseTime(s string, fallback time.Time) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return fallback
	}
	return t
}
