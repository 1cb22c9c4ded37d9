package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instance"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instancestatus"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/interruptionqueue"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/launchtemplate"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/unavailable"
)

// EC2API is the part of the EC2 client the provider calls.
type EC2API interface {
	launchtemplate.EC2API
	instance.EC2API
	instancestatus.EC2API
}

var _ EC2API = (*ec2.Client)(nil)

// Deps are the provider's dependencies.
type Deps struct {
	// Client reads EC2NodeClasses. Required.
	Client client.Reader
	// EC2 is the EC2 client. Required.
	EC2 EC2API
	// Clock times the unavailable-offerings cache and launch template sweeps. Default the real clock.
	Clock clock.Clock
	// ClusterName tags what is launched; ClusterEndpoint, ClusterCABundle and ClusterDNS go into user data.
	ClusterName, ClusterEndpoint, ClusterCABundle, ClusterDNS string
	// ClusterCIDR is the service IPv4 range (AL2023's NodeConfig needs it).
	ClusterCIDR string
	// Region the instances run in. Default us-east-1.
	Region string
	// Zones of the region, for the default instance types. Default <region>a, b, c.
	Zones []string
	// UserData renders a node's user data. Required.
	UserData UserDataRenderer
	// InstanceTypes lists the instance types per node class. Default the embedded catalog, shaped by the
	// node class, with the unavailable-offerings cache applied.
	InstanceTypes InstanceTypeSource
	// Unavailable is the unavailable-offerings cache (shared with InstanceTypes). Default a new one on Clock.
	Unavailable *unavailable.Offerings
	// VMMemoryOverheadPercent is VM_MEMORY_OVERHEAD_PERCENT for the default instance types.
	VMMemoryOverheadPercent float64
	// Subnets lists the subnets a node class's selector terms match, with their free addresses, to launch
	// into the one with the most free IPs per zone. Nil: the first subnet per zone of the node class's status.
	Subnets SubnetLister
	// BatchIdle and BatchMax are the CreateFleet batch windows (instance.Deps).
	BatchIdle, BatchMax time.Duration
	// InterruptionQueue is the SQS queue of interruption events (INTERRUPTION_QUEUE), read with SQS; empty
	// for none.
	InterruptionQueue string
	SQS               interruptionqueue.SQSAPI
	// InterruptionWait is the queue's long poll (interruptionqueue.Options.Wait).
	InterruptionWait time.Duration
	// Reservations turns on launching into the node classes' capacity reservations (the ReservedCapacity
	// feature gate): reserved offerings with their room, and launches that target them. Nil: off.
	Reservations Reservations
	// Registerer takes the instance provider's metrics (instance.NewMetrics). Nil: they go to a registry
	// of their own, which nothing serves.
	Registerer prometheus.Registerer
}

// CloudProvider launches NodeClaims as EC2 instances. Construct it with New.
type CloudProvider struct {
	kube            client.Reader
	clusterName     string
	clusterEndpoint string
	clusterCABundle string
	clusterDNS      string
	clusterCIDR     string
	region          string
	userData        UserDataRenderer
	instanceTypes   InstanceTypeSource
	subnets         SubnetLister
	unavailable     *unavailable.Offerings
	templates       *launchtemplate.Provider
	instances       *instance.Provider
	interruptions   *interruptionqueue.Queue
	health          *instancestatus.Provider
	reservations    Reservations
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New returns the provider.
func New(deps Deps) (*CloudProvider, error) {
	if deps.Client == nil || deps.EC2 == nil || deps.UserData == nil {
		return nil, errors.New("the aws provider needs a Kubernetes client, an EC2 client and a user data renderer")
	}
	if deps.ClusterName == "" {
		return nil, errors.New("the aws provider needs the cluster name")
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Region == "" {
		deps.Region = "us-east-1"
	}
	if len(deps.Zones) == 0 {
		deps.Zones = []string{deps.Region + "a", deps.Region + "b", deps.Region + "c"}
	}
	if deps.Unavailable == nil {
		deps.Unavailable = unavailable.New(deps.Clock)
	}
	if deps.VMMemoryOverheadPercent == 0 {
		deps.VMMemoryOverheadPercent = catalog.DefaultVMMemoryOverheadPercent
	}
	if deps.InstanceTypes == nil {
		base, err := catalog.EC2(catalog.EC2Options{Region: deps.Region, Zones: deps.Zones})
		if err != nil {
			return nil, fmt.Errorf("loading the EC2 catalog, %w", err)
		}
		deps.InstanceTypes = &catalogTypes{base: base, vmOverhead: deps.VMMemoryOverheadPercent, unavailable: deps.Unavailable,
			clock: deps.Clock, cache: map[nodeClassKey]cloudprovider.InstanceTypes{}, listed: map[nodeClassKey]listing{}}
	}
	if deps.InterruptionQueue != "" && deps.SQS == nil {
		return nil, errors.New("the aws provider needs an SQS client to read the interruption queue")
	}
	if deps.Reservations != nil {
		deps.InstanceTypes = reservedTypes{InstanceTypeSource: deps.InstanceTypes, reservations: deps.Reservations, unavailable: deps.Unavailable}
	}
	var instanceMetrics *instance.Metrics
	if deps.Registerer != nil {
		instanceMetrics = instance.NewMetrics(deps.Registerer)
	}
	c := &CloudProvider{
		reservations: deps.Reservations, kube: deps.Client, clusterName: deps.ClusterName, clusterEndpoint: deps.ClusterEndpoint, clusterCABundle: deps.ClusterCABundle,
		clusterDNS: deps.ClusterDNS, clusterCIDR: deps.ClusterCIDR, region: deps.Region, userData: deps.UserData, instanceTypes: deps.InstanceTypes, subnets: deps.Subnets, unavailable: deps.Unavailable,
		templates: launchtemplate.New(deps.EC2, deps.ClusterName, deps.Clock, deps.Registerer),
		instances: instance.New(instance.Deps{EC2: deps.EC2, ClusterName: deps.ClusterName, Unavailable: deps.Unavailable,
			BatchIdle: deps.BatchIdle, BatchMax: deps.BatchMax, IsClaimed: recordedBy(deps.Client), Metrics: instanceMetrics}),
	}
	c.health = instancestatus.New(deps.EC2, c.instances, deps.Clock)
	if deps.InterruptionQueue != "" {
		c.interruptions = interruptionqueue.New(interruptionqueue.Options{SQS: deps.SQS, Name: deps.InterruptionQueue,
			Instances: c.instances, Unavailable: deps.Unavailable, Reservations: deps.Reservations, Clock: deps.Clock, Wait: deps.InterruptionWait})
	}
	return c, nil
}

// InterruptionQueue is the interruption queue, or nil without INTERRUPTION_QUEUE.
func (c *CloudProvider) InterruptionQueue() cloudprovider.InterruptionSource {
	if c.interruptions == nil {
		return nil
	}
	return c.interruptions
}

// InstanceHealth reports the cluster's instances failing EC2 status checks or with maintenance scheduled
// (DescribeInstanceStatus), whether or not an interruption queue is configured.
func (c *CloudProvider) InstanceHealth() cloudprovider.InstanceHealthSource { return c.health }

// recordedBy reports whether a NodeClaim's status holds the provider ID. It reads every NodeClaim, and runs
// only when a launch finds an untagged instance it could adopt (after a crash).
func recordedBy(kube client.Reader) func(context.Context, string) (bool, error) {
	if kube == nil {
		return nil
	}
	return func(ctx context.Context, providerID string) (bool, error) {
		claims := &v1.NodeClaimList{}
		if err := kube.List(ctx, claims); err != nil {
			return false, fmt.Errorf("listing nodeclaims, %w", err)
		}
		return slices.ContainsFunc(claims.Items, func(nc v1.NodeClaim) bool { return nc.Status.ProviderID == providerID }), nil
	}
}

// Name is "aws".
func (c *CloudProvider) Name() string { return "aws" }

// LaunchTemplates is the launch template provider (for its sweeping controller).
func (c *CloudProvider) LaunchTemplates() *launchtemplate.Provider { return c.templates }

// Delete terminates the NodeClaim's instance; NodeClaimNotFound once it is terminated. A NodeClaim
// without a provider ID is looked up by its tag (its launch may have succeeded unrecorded).
func (c *CloudProvider) Delete(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	id, err := c.instanceID(ctx, nodeClaim)
	if err != nil {
		return err
	}
	return c.instances.Delete(ctx, id)
}

func (c *CloudProvider) instanceID(ctx context.Context, nodeClaim *v1.NodeClaim) (string, error) {
	if nodeClaim.Status.ProviderID != "" {
		return instance.ParseProviderID(nodeClaim.Status.ProviderID)
	}
	in, err := c.instances.FindByNodeClaim(ctx, nodeClaim.Name)
	if err != nil {
		return "", err
	}
	if in == nil {
		return "", cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("no instance was launched for nodeclaim %q", nodeClaim.Name))
	}
	return in.ID, nil
}

// Get describes the instance with the provider ID as a NodeClaim.
func (c *CloudProvider) Get(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	id, err := instance.ParseProviderID(providerID)
	if err != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(err)
	}
	in, err := c.instances.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return c.fromInstance(in), nil
}

// List describes every live instance Lathe launched for the cluster.
func (c *CloudProvider) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	instances, err := c.instances.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*v1.NodeClaim, 0, len(instances))
	for _, in := range instances {
		out = append(out, c.fromInstance(in))
	}
	return out, nil
}

// fromInstance is a NodeClaim describing the instance: its name from the nodeclaim tag, its launch time,
// labels of its type, zone and capacity type, provider ID and image.
func (c *CloudProvider) fromInstance(in *instance.Instance) *v1.NodeClaim {
	labels := map[string]string{
		v1.LabelInstanceType: in.InstanceType, v1.LabelTopologyZone: in.Zone, v1.LabelTopologyRegion: c.region,
		v1.CapacityTypeLabelKey: in.CapacityType,
	}
	if in.CapacityReservationID != "" {
		labels[awsv1.LabelCapacityReservationID] = in.CapacityReservationID
	}
	if pool, ok := in.Tags[instance.NodePoolTagKey]; ok {
		labels[v1.NodePoolLabelKey] = pool
	}
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: in.Tags[instance.NodeClaimTagKey], Labels: labels, CreationTimestamp: metav1.NewTime(in.LaunchTime)},
		Status:     v1.NodeClaimStatus{ProviderID: in.ProviderID(), ImageID: in.ImageID},
	}
}

// GetInstanceTypes returns the instance types of the NodePool's EC2NodeClass. A pool whose node class
// isn't found has none.
func (c *CloudProvider) GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	nodeClass, err := c.nodeClass(ctx, nodePool.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	its, err := c.instanceTypes.List(ctx, nodeClass)
	if err != nil {
		return nil, err
	}
	return withSubnetZones(its, nodeClass), nil
}

// withSubnetZones marks offerings in zones without a resolved subnet unavailable (nothing can launch there).
func withSubnetZones(its cloudprovider.InstanceTypes, nodeClass *awsv1.EC2NodeClass) cloudprovider.InstanceTypes {
	zones := map[string]bool{}
	for _, s := range nodeClass.Status.Subnets {
		zones[s.Zone] = true
	}
	out := make(cloudprovider.InstanceTypes, 0, len(its))
	for _, it := range its {
		cp := *it
		cp.Offerings = slices.Clone(it.Offerings)
		for i := range cp.Offerings {
			if !zones[cp.Offerings[i].Zone] {
				cp.Offerings[i].Available = false
			}
		}
		out = append(out, &cp)
	}
	return out
}

func (c *CloudProvider) nodeClass(ctx context.Context, ref *v1.NodeClassReference) (*awsv1.EC2NodeClass, error) {
	if ref == nil || ref.Group != awsv1.Group || ref.Kind != "EC2NodeClass" {
		return nil, fmt.Errorf("node class reference %v is not an EC2NodeClass", ref)
	}
	nodeClass := &awsv1.EC2NodeClass{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: ref.Name}, nodeClass); err != nil {
		return nil, fmt.Errorf("getting ec2nodeclass %q, %w", ref.Name, err)
	}
	return nodeClass, nil
}

// RepairPolicies are the AWS provider's (Karpenter's): see catalog.EC2RepairPolicies.
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	return catalog.EC2RepairPolicies()
}

// selectorText names a node class's subnet selector terms for messages: "tags karpenter.sh/discovery=demo".
func selectorText(terms []awsv1.SubnetSelectorTerm) string {
	var parts []string
	for _, t := range terms {
		if t.ID != "" {
			parts = append(parts, "id "+t.ID)
		}
		var tags []string
		for k, v := range t.Tags {
			tags = append(tags, k+"="+v)
		}
		slices.Sort(tags)
		if len(tags) > 0 {
			parts = append(parts, "tags "+strings.Join(tags, ","))
		}
	}
	return strings.Join(parts, " or ")
}
