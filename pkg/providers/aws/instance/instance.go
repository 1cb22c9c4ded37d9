// Package instance launches, finds and terminates the EC2 instances behind NodeClaims. A launch is one
// CreateFleet of type instant over the offerings the NodeClaim allows (spot: price-capacity-optimized,
// on-demand: lowest-price); offerings EC2 reports without capacity go into the unavailable-offerings cache
// and the launch is retried with what is left. Identical launches that arrive together share one
// CreateFleet (see batcher.go). A launch is idempotent per NodeClaim: an instance already tagged with the
// NodeClaim's name is returned instead of launching again; the client token derives from the
// NodeClaim's UID, so a request EC2 answered but whose answer was lost is not launched twice; and an
// instance a batch launched but a crash left without its NodeClaim tag is adopted by its claim
// (adopt.go).
package instance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// EC2API is the part of the EC2 client the provider calls.
type EC2API interface {
	CreateFleet(context.Context, *ec2.CreateFleetInput, ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error)
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	TerminateInstances(context.Context, *ec2.TerminateInstancesInput, ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
	CreateTags(context.Context, *ec2.CreateTagsInput, ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
}

// Unavailable is the unavailable-offerings cache.
type Unavailable interface {
	IsUnavailable(instanceType, zone, capacityType string) bool
	MarkUnavailable(instanceType, zone, capacityType string)
}

// Tag keys Lathe puts on what it launches (Karpenter's).
const (
	NodeClaimTagKey   = "karpenter.sh/nodeclaim"
	NodePoolTagKey    = "karpenter.sh/nodepool"
	NodeClassTagKey   = "karpenter.k8s.aws/ec2nodeclass"
	EKSClusterTagKey  = "eks:eks-cluster-name"
	clusterTagPrefix  = "kubernetes.io/cluster/"
	MaxInstanceTypes  = 60
	capacityTypeSpot  = "spot"
	ownedTagValue     = "owned"
	iceErrorCode      = "InsufficientInstanceCapacity"
	unfulfillableCode = "UnfulfillableCapacity"
)

// ClusterTagKey is the kubernetes.io/cluster/<name> tag key.
func ClusterTagKey(clusterName string) string { return clusterTagPrefix + clusterName }

// Override is one pool the fleet may launch from: a launch template, instance type and subnet (zone).
type Override struct {
	LaunchTemplate string
	InstanceType   string
	Zone, SubnetID string
	// ZoneID is the zone's ID, for metrics; it follows from Zone, so it is left out of batch keys and
	// client tokens.
	ZoneID  string `json:"-"`
	ImageID string
	Price   float64
	// ReservationID is the capacity reservation the override's launch template targets (reserved launches).
	ReservationID string `json:",omitempty"`
}

// Request is one NodeClaim's launch.
type Request struct {
	NodeClaimName, NodeClaimUID string
	CapacityType                string
	Overrides                   []Override
	// Tags go on the instance, its volumes and network interfaces, with the NodeClaim tag.
	Tags map[string]string
	// Reservation is the kind of capacity reservation a reserved launch targets (see reservedFleet).
	Reservation ReservationKind
}

// Instance is what the provider knows of an EC2 instance.
type Instance struct {
	ID, InstanceType, Zone, CapacityType string
	// ZoneID is the zone's ID (use1-az1), when EC2 reported it.
	ZoneID                   string
	ImageID, SubnetID, State string
	SecurityGroupIDs         []string
	LaunchTime               time.Time
	Tags                     map[string]string
	// CapacityReservationID is the reservation the instance runs in ("" for none).
	CapacityReservationID string
}

// ProviderID is aws:///<zone>/<instance-id>.
func (i *Instance) ProviderID() string { return "aws:///" + i.Zone + "/" + i.ID }

// ParseProviderID returns the instance ID of aws:///<zone>/<instance-id>.
func ParseProviderID(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, "aws:///")
	_, id, found := strings.Cut(rest, "/")
	if !ok || !found || !strings.HasPrefix(id, "i-") {
		return "", fmt.Errorf("parsing provider ID %q: want aws:///<zone>/<instance-id>", providerID)
	}
	return id, nil
}

// Deps are the provider's dependencies.
type Deps struct {
	EC2         EC2API
	ClusterName string
	Unavailable Unavailable
	// BatchIdle and BatchMax are the CreateFleet batch windows (defaults BatchIdle, BatchMax; a negative
	// BatchIdle turns batching off).
	BatchIdle, BatchMax time.Duration
	// IsClaimed reports whether a NodeClaim's status records the provider ID; an untagged instance one
	// does is not adopted by another claim (see adopt.go). Nil: none is.
	IsClaimed func(ctx context.Context, providerID string) (bool, error)
	// Metrics records batches and failures. Nil: collectors on a registry of their own, which nothing serves.
	Metrics *Metrics
}

// Provider launches and finds the cluster's instances. Safe for concurrent use.
type Provider struct {
	ec2         EC2API
	clusterName string
	unavailable Unavailable
	batcher     *batcher
	isClaimed   func(context.Context, string) (bool, error)
	orphans     orphans
	metrics     *Metrics
}

// New returns a provider.
func New(deps Deps) *Provider {
	if deps.BatchIdle == 0 {
		deps.BatchIdle = BatchIdle
	}
	if deps.BatchMax == 0 {
		deps.BatchMax = BatchMax
	}
	if deps.Metrics == nil {
		deps.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	p := &Provider{ec2: deps.EC2, clusterName: deps.ClusterName, unavailable: deps.Unavailable, isClaimed: deps.IsClaimed, metrics: deps.Metrics}
	p.batcher = newBatcher(createFleetBatcher, deps.Metrics, deps.BatchIdle, deps.BatchMax, p.execFleet)
	return p
}

// Create launches the NodeClaim's instance, or returns the one already launched for it. It returns an
// InsufficientCapacityError when no override has capacity.
func (p *Provider) Create(ctx context.Context, req Request) (*Instance, error) {
	if existing, err := p.FindByNodeClaim(ctx, req.NodeClaimName); err != nil || existing != nil {
		return existing, err
	}
	if orphan, err := p.adopt(ctx, req); err != nil || orphan != nil {
		return orphan, err
	}
	last := len(req.Overrides) + 1
	for {
		overrides := p.available(req)
		if len(overrides) >= last {
			return nil, fmt.Errorf("launching an instance for nodeclaim %q, the offerings EC2 found without capacity are not ones it was offered", req.NodeClaimName)
		}
		last = len(overrides)
		if len(overrides) == 0 {
			return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("all %d %s offerings of nodeclaim %q are unavailable",
				len(req.Overrides), req.CapacityType, req.NodeClaimName))
		}
		res := p.batcher.add(ctx, batchKey(req, overrides), &launchRequest{req: req, overrides: overrides})
		if res.err != nil {
			return nil, res.err
		}
		marked := p.markUnavailable(req.CapacityType, res.errors)
		if res.instance != nil {
			if res.untagged {
				p.tagNodeClaim(ctx, res.instance, req.NodeClaimName)
			}
			return res.instance, nil
		}
		if !marked {
			return nil, fmt.Errorf("launching an instance for nodeclaim %q, %s", req.NodeClaimName, describeErrors(res.errors))
		}
	}
}

// available are the request's overrides not in the unavailable cache, cheapest first, of at most
// MaxInstanceTypes instance types.
func (p *Provider) available(req Request) []Override {
	var out []Override
	types := map[string]bool{}
	sorted := slices.Clone(req.Overrides)
	slices.SortStableFunc(sorted, func(a, b Override) int {
		switch {
		case a.Price < b.Price:
			return -1
		case a.Price > b.Price:
			return 1
		}
		return 0
	})
	for _, o := range sorted {
		if p.unavailable != nil && p.unavailable.IsUnavailable(o.InstanceType, o.Zone, req.CapacityType) {
			continue
		}
		if !types[o.InstanceType] && len(types) == MaxInstanceTypes {
			continue
		}
		types[o.InstanceType] = true
		out = append(out, o)
	}
	return out
}

// markUnavailable puts the offerings EC2 had no capacity for into the cache, and reports whether there
// were any.
func (p *Provider) markUnavailable(capacityType string, errs []ec2types.CreateFleetError) bool {
	marked := false
	for _, e := range errs {
		code := aws.ToString(e.ErrorCode)
		if code != iceErrorCode && code != unfulfillableCode && code != reservationFullCode || e.LaunchTemplateAndOverrides == nil || e.LaunchTemplateAndOverrides.Overrides == nil {
			continue
		}
		o := e.LaunchTemplateAndOverrides.Overrides
		if p.unavailable != nil {
			p.unavailable.MarkUnavailable(string(o.InstanceType), aws.ToString(o.AvailabilityZone), capacityType)
		}
		marked = true
	}
	return marked && p.unavailable != nil
}

func describeErrors(errs []ec2types.CreateFleetError) string {
	if len(errs) == 0 {
		return "CreateFleet returned no instance and no error"
	}
	var parts []string
	for _, e := range errs {
		parts = append(parts, aws.ToString(e.ErrorCode)+": "+aws.ToString(e.ErrorMessage))
	}
	slices.Sort(parts)
	return strings.Join(slices.Compact(parts), "; ")
}

// FindByNodeClaim returns the live instance tagged with the NodeClaim's name, or nil.
func (p *Provider) FindByNodeClaim(ctx context.Context, nodeClaimName string) (*Instance, error) {
	found, err := p.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + NodeClaimTagKey), Values: []string{nodeClaimName}},
		{Name: aws.String("tag:" + ClusterTagKey(p.clusterName)), Values: []string{ownedTagValue}},
		liveStates(),
	}})
	if err != nil || len(found) == 0 {
		return nil, err
	}
	return found[0], nil
}

// Get returns the instance, or a NodeClaimNotFoundError when it doesn't exist or is terminated.
func (p *Provider) Get(ctx context.Context, id string) (*Instance, error) {
	found, err := p.describe(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if hasCode(err, "InvalidInstanceID.NotFound") || err == nil && (len(found) == 0 || found[0].State == string(ec2types.InstanceStateNameTerminated)) {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s is gone", id))
	}
	if err != nil {
		return nil, err
	}
	return found[0], nil
}

// List returns every live instance Lathe launched for the cluster (tagged kubernetes.io/cluster/<name>:
// owned and with a karpenter.sh/nodepool tag, so other instances of the cluster are left alone).
func (p *Provider) List(ctx context.Context) ([]*Instance, error) {
	return p.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + ClusterTagKey(p.clusterName)), Values: []string{ownedTagValue}},
		{Name: aws.String("tag-key"), Values: []string{NodePoolTagKey}},
		liveStates(),
	}})
}

// Find returns the cluster's instances (tagged kubernetes.io/cluster/<name>: owned) with the IDs, in any
// state (terminated ones too, while EC2 still lists them), by ID. An ID EC2 doesn't list for the cluster
// is left out rather than failing the call.
func (p *Provider) Find(ctx context.Context, ids []string) (map[string]*Instance, error) {
	out := map[string]*Instance{}
	if len(ids) == 0 {
		return out, nil
	}
	found, err := p.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("instance-id"), Values: ids},
		{Name: aws.String("tag:" + ClusterTagKey(p.clusterName)), Values: []string{ownedTagValue}},
	}})
	if err != nil {
		return nil, err
	}
	for _, in := range found {
		out[in.ID] = in
	}
	return out, nil
}

// Delete terminates the instance. It returns a NodeClaimNotFoundError once the instance is terminated.
func (p *Provider) Delete(ctx context.Context, id string) error {
	in, err := p.Get(ctx, id)
	if err != nil {
		return err
	}
	_, err = p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		p.metrics.terminationFailures.WithLabelValues(in.Zone, in.ZoneID).Inc()
	}
	if hasCode(err, "InvalidInstanceID.NotFound") {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s is gone", id))
	}
	if err != nil {
		return fmt.Errorf("terminating instance %s, %w", id, err)
	}
	return nil
}

func liveStates() ec2types.Filter {
	return ec2types.Filter{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped", "shutting-down"}}
}

// describe pages through DescribeInstances.
func (p *Provider) describe(ctx context.Context, in *ec2.DescribeInstancesInput) ([]*Instance, error) {
	var out []*Instance
	pages := ec2.NewDescribeInstancesPaginator(p.ec2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instances, %w", err)
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				out = append(out, fromEC2(i))
			}
		}
	}
	return out, nil
}

func fromEC2(i ec2types.Instance) *Instance {
	out := &Instance{ID: aws.ToString(i.InstanceId), InstanceType: string(i.InstanceType), ImageID: aws.ToString(i.ImageId),
		SubnetID: aws.ToString(i.SubnetId), CapacityType: "on-demand", Tags: map[string]string{}}
	if i.Placement != nil {
		out.Zone, out.ZoneID = aws.ToString(i.Placement.AvailabilityZone), aws.ToString(i.Placement.AvailabilityZoneId)
	}
	if i.State != nil {
		out.State = string(i.State.Name)
	}
	if i.LaunchTime != nil {
		out.LaunchTime = *i.LaunchTime
	}
	if i.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		out.CapacityType = capacityTypeSpot
	}
	if id := aws.ToString(i.CapacityReservationId); id != "" {
		out.CapacityType, out.CapacityReservationID = capacityTypeReserved, id
	}
	for _, g := range i.SecurityGroups {
		out.SecurityGroupIDs = append(out.SecurityGroupIDs, aws.ToString(g.GroupId))
	}
	for _, t := range i.Tags {
		out.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

func hasCode(err error, code string) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == code
}

// withNodeClaim returns the tags with the NodeClaim's.
func withNodeClaim(tags map[string]string, name string) map[string]string {
	out := maps.Clone(tags)
	if out == nil {
		out = map[string]string{}
	}
	out[NodeClaimTagKey] = name
	return out
}
