package instancestatus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"k8s.io/utils/clock"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instance"
)

// EC2API is the part of the EC2 client the provider calls (IAM: ec2:DescribeInstanceStatus).
type EC2API interface {
	DescribeInstanceStatus(context.Context, *ec2.DescribeInstanceStatusInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error)
}

var _ EC2API = (*ec2.Client)(nil)

// Instances finds the cluster's instances by ID (instance.Provider.Find).
type Instances interface {
	Find(ctx context.Context, ids []string) (map[string]*instance.Instance, error)
}

// Categories of failing checks, as Karpenter's AWS provider names them in its unhealthy count.
const (
	CategoryInstanceStatus = "InstanceStatus"
	CategorySystemStatus   = "SystemStatus"
	CategoryEventStatus    = "EventStatus"
)

// UnhealthyThreshold is how long an instance or system status check must have been failing before the
// instance is reported (a scheduled event is reported at once).
const UnhealthyThreshold = 2 * time.Minute

// queries are the DescribeInstanceStatus calls made: EC2 ANDs different filters, so each way of being
// unhealthy is its own call.
var queries = [][]ec2types.Filter{
	{{Name: aws.String("instance-status.status"), Values: []string{string(ec2types.SummaryStatusImpaired)}}},
	{{Name: aws.String("system-status.status"), Values: []string{string(ec2types.SummaryStatusImpaired)}}},
	{{Name: aws.String("event.code"), Values: []string{
		string(ec2types.EventCodeInstanceReboot), string(ec2types.EventCodeSystemReboot), string(ec2types.EventCodeSystemMaintenance),
		string(ec2types.EventCodeInstanceRetirement), string(ec2types.EventCodeInstanceStop),
	}}},
}

// Provider reports the cluster's unhealthy instances. Build it with New.
type Provider struct {
	ec2       EC2API
	instances Instances
	clock     clock.PassiveClock
}

var _ cloudprovider.InstanceHealthSource = (*Provider)(nil)

// New returns the provider; clk defaults to the real clock.
func New(api EC2API, instances Instances, clk clock.PassiveClock) *Provider {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Provider{ec2: api, instances: instances, clock: clk}
}

// UnhealthyInstances returns one entry per cluster instance and failing category.
func (p *Provider) UnhealthyInstances(ctx context.Context) ([]cloudprovider.UnhealthyInstance, error) {
	statuses, err := p.describe(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	var failing []failure
	for _, s := range statuses {
		f := p.failures(s)
		if len(f) > 0 {
			ids = append(ids, aws.ToString(s.InstanceId))
			failing = append(failing, f...)
		}
	}
	owned, err := p.instances.Find(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("finding the cluster's unhealthy instances, %w", err)
	}
	var out []cloudprovider.UnhealthyInstance
	for _, f := range failing {
		in, ok := owned[f.instanceID]
		if !ok || in.Zone == "" {
			continue
		}
		out = append(out, cloudprovider.UnhealthyInstance{ProviderID: in.ProviderID(), Kind: f.kind, Category: f.category, Since: f.since})
	}
	return out, nil
}

// describe runs the queries and returns each instance once.
func (p *Provider) describe(ctx context.Context) ([]ec2types.InstanceStatus, error) {
	seen := map[string]bool{}
	var out []ec2types.InstanceStatus
	for _, filters := range queries {
		pages := ec2.NewDescribeInstanceStatusPaginator(p.ec2, &ec2.DescribeInstanceStatusInput{Filters: filters})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, describeError(err)
			}
			for _, s := range page.InstanceStatuses {
				if id := aws.ToString(s.InstanceId); !seen[id] {
					seen[id] = true
					out = append(out, s)
				}
			}
		}
	}
	return out, nil
}

func describeError(err error) error {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "UnauthorizedOperation" {
		return fmt.Errorf("%w: the IAM policy lacks ec2:DescribeInstanceStatus; add it to the controller role and restart Lathe, %w",
			cloudprovider.ErrNotPermitted, err)
	}
	return fmt.Errorf("describing instance status, %w", err)
}

// failure is one failing category of one instance.
type failure struct {
	instanceID, category string
	kind                 cloudprovider.InterruptionKind
	since                time.Time
}

// failures are the instance's categories that count: a status check with a detail failed for at least
// UnhealthyThreshold (the earliest such detail dates it), any scheduled event.
func (p *Provider) failures(s ec2types.InstanceStatus) []failure {
	id := aws.ToString(s.InstanceId)
	var out []failure
	check := func(summary *ec2types.InstanceStatusSummary, category string, kind cloudprovider.InterruptionKind) {
		if summary == nil {
			return
		}
		var since []time.Time
		for _, d := range summary.Details {
			if d.Status == ec2types.StatusTypeFailed && p.clock.Since(aws.ToTime(d.ImpairedSince)) >= UnhealthyThreshold {
				since = append(since, aws.ToTime(d.ImpairedSince))
			}
		}
		if len(since) > 0 {
			out = append(out, failure{instanceID: id, category: category, kind: kind, since: slices.MinFunc(since, time.Time.Compare)})
		}
	}
	check(s.InstanceStatus, CategoryInstanceStatus, cloudprovider.InterruptionInstanceStatus)
	check(s.SystemStatus, CategorySystemStatus, cloudprovider.InterruptionSystemStatus)
	if len(s.Events) > 0 {
		out = append(out, failure{instanceID: id, category: CategoryEventStatus, kind: cloudprovider.InterruptionEventStatus, since: p.clock.Now()})
	}
	return out
}
