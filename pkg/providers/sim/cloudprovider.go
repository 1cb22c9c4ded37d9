package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// Labels and annotations the simulation puts on the Nodes it launches.
const (
	// NodeClaimLabelKey names the NodeClaim an instance was launched for; every sim instance has it.
	NodeClaimLabelKey = "sim.lathe.sh/nodeclaim"
	// InstanceIDLabelKey holds the instance ID (the last part of the provider ID).
	InstanceIDLabelKey = "sim.lathe.sh/instance-id"
	// TerminatedAnnotationKey marks an instance as terminated while its Node object is still being deleted.
	TerminatedAnnotationKey = "sim.lathe.sh/terminated"
	// ImageIDAnnotationKey records the image the instance was "booted" from.
	ImageIDAnnotationKey = "sim.lathe.sh/image-id"
	// DriftAnnotationKey on a Node makes its instance drifted from its node class, with the value as the
	// reason: kubectl annotate node <name> sim.lathe.sh/drift=AMIDrift.
	DriftAnnotationKey = "sim.lathe.sh/drift"
	// KwokNodeAnnotationKey is the annotation kwok manages Nodes by.
	KwokNodeAnnotationKey = "kwok.x-k8s.io/node"
)

// Defaults of Deps.
const (
	DefaultRegion = "us-east-1"
	// UnavailableOfferingsTTL is how long an offering that failed with insufficient capacity stays unavailable
	// (Karpenter's AWS provider uses three minutes).
	UnavailableOfferingsTTL = 3 * time.Minute
	// ProviderIDPrefix starts every provider ID the simulation hands out.
	ProviderIDPrefix = "sim://"
)

// ConfigMap the simulation reads injected insufficient capacity from.
const (
	ConfigMapNamespace           = "kube-system"
	ConfigMapName                = "lathe-sim"
	InsufficientCapacityMapKey   = "insufficientCapacity"
	insufficientCapacityAnywhere = "*"
)

// Deps are the simulated provider's dependencies.
type Deps struct {
	// Client writes the Nodes that stand for instances. Required.
	Client client.Client
	// Reader reads the instances (Nodes) and the lathe-sim ConfigMap. Default Client. It should read straight
	// from the API server, as a cloud API answers from its own state: through a cache, a Node created a
	// moment ago could be missed, and Delete would report its instance gone while it runs; and a cached
	// ConfigMap would need list and watch on every ConfigMap. The EC2NodeClasses are read through Client,
	// whose cache the rest of Lathe reads them from too: reading them through Reader, at every launch and
	// instance-type listing, cost the API server 740 requests in one run of BenchmarkPlanFidelity/500. An
	// instance is looked up by provider ID in Client's cache first, and through Reader only when the cache
	// doesn't show it (nodeByProviderID).
	Reader client.Reader
	// Clock times the unavailable-offerings cache and LaunchDelay. Default the real clock.
	Clock clock.Clock
	// InstanceTypes is the catalog. Default the embedded EC2 catalog in Region (zones <region>a/b/c).
	InstanceTypes cloudprovider.InstanceTypes
	// LaunchDelay is how long after Create returns the instance's Node appears (like an instance booting
	// and its kubelet registering). Zero writes the Node before Create returns. A positive delay needs a
	// Clock with AfterFunc (the real clock and the testing FakeClock have it).
	LaunchDelay time.Duration
	// Region the instances run in. Default us-east-1.
	Region string
	// VMMemoryOverheadPercent is VM_MEMORY_OVERHEAD_PERCENT: the share of each type's memory the hypervisor
	// keeps. Nil means catalog.DefaultVMMemoryOverheadPercent, which the catalog's figures assume.
	VMMemoryOverheadPercent *float64
}

// CloudProvider is the simulated provider. Construct it with New.
type CloudProvider struct {
	client      client.Client
	reader      client.Reader
	clock       clock.Clock
	timers      clock.WithDelayedExecution
	catalog     cloudprovider.InstanceTypes
	launchDelay time.Duration
	vmOverhead  float64
	region      string
	zoneIDs     map[string]string
	// configReads coalesces concurrent reads of the lathe-sim ConfigMap.
	configReads singleflight.Group

	// mu guards the fields below. Never call clock methods while holding it: the testing FakeClock runs
	// AfterFunc callbacks (which take mu) under its own lock.
	mu            sync.Mutex
	capacity      *capacity
	pending       map[string]*pendingLaunch // by NodeClaim name
	interruptions []queuedInterruption
	// lastInterruptionID numbers the interruption messages.
	lastInterruptionID uint64
	byNodeClass        map[nodeClassKey]cloudprovider.InstanceTypes
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New returns a simulated provider.
func New(deps Deps) (*CloudProvider, error) {
	if deps.Client == nil {
		return nil, errors.New("sim provider needs a client")
	}
	if deps.Reader == nil {
		deps.Reader = deps.Client
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Region == "" {
		deps.Region = DefaultRegion
	}
	if deps.InstanceTypes == nil {
		its, err := catalog.EC2(catalog.EC2Options{Region: deps.Region, Zones: defaultZones(deps.Region)})
		if err != nil {
			return nil, fmt.Errorf("loading the EC2 catalog, %w", err)
		}
		deps.InstanceTypes = its
	}
	timers, ok := deps.Clock.(clock.WithDelayedExecution)
	if deps.LaunchDelay > 0 && !ok {
		return nil, errors.New("a launch delay needs a clock with AfterFunc")
	}
	return &CloudProvider{
		client:      deps.Client,
		reader:      deps.Reader,
		clock:       deps.Clock,
		timers:      timers,
		catalog:     deps.InstanceTypes,
		launchDelay: deps.LaunchDelay,
		vmOverhead:  ptr.Deref(deps.VMMemoryOverheadPercent, catalog.DefaultVMMemoryOverheadPercent),
		region:      deps.Region,
		zoneIDs:     zoneIDs(deps.Region, catalogZones(deps.InstanceTypes)),
		capacity:    newCapacity(),
		pending:     map[string]*pendingLaunch{},
		byNodeClass: map[nodeClassKey]cloudprovider.InstanceTypes{},
	}, nil
}

// Name is "sim".
func (c *CloudProvider) Name() string { return "sim" }

// Create launches the cheapest instance the NodeClaim allows, or returns the one already launched for it.
func (c *CloudProvider) Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	if existing, err := c.existing(ctx, c.client, nodeClaim.Name); err != nil || existing != nil {
		if err != nil {
			return nil, err
		}
		return launched(nodeClaim, existing), nil
	}
	nodeClass, amis, err := c.resolveNodeClass(ctx, nodeClaim)
	if err != nil {
		return nil, err
	}
	reqs, err := nodeClaimRequirements(nodeClaim)
	if err != nil {
		return nil, err
	}
	injected, err := c.injectedCapacity(ctx)
	if err != nil {
		return nil, err
	}
	choice, err := c.chooseOffering(ctx, nodeClaim, c.typesFor(nodeClass), reqs, injected)
	if err != nil {
		return nil, err
	}
	node := c.newNode(nodeClaim, choice, amis)
	if err := c.launch(ctx, node); errors.Is(err, errNodeExists) {
		// Launched before, and the cache has yet to show it: the instance is the one its Node describes.
		if node, err = c.existing(ctx, c.reader, nodeClaim.Name); err != nil || node == nil {
			return nil, cmp.Or(err, fmt.Errorf("node %q exists and then doesn't", nodeClaim.Name))
		}
		return launched(nodeClaim, node), nil
	} else if err != nil {
		return nil, err
	}
	log.FromContext(ctx).V(1).Info("launched instance", "NodeClaim", nodeClaim.Name, "providerID", node.Spec.ProviderID,
		"instanceType", choice.instanceType.Name, "zone", choice.offering.Zone, "capacityType", choice.offering.CapacityType)
	return launched(nodeClaim, node), nil
}

// existing returns the instance already launched for the NodeClaim (pending, or its Node as read reads it),
// nil when there is none, and an error when a Node of that name wasn't launched for the claim. Create looks
// in the cache (c.client): a Node the cache has yet to show makes its create fail with errNodeExists, and
// the Node is then read from the API server, so a pre-read from it need not cost every launch an etcd round
// trip. A verdict that the instance is gone is read from the API server (c.reader): a cache that lags would
// leak the instance.
func (c *CloudProvider) existing(ctx context.Context, read client.Reader, nodeClaimName string) (*corev1.Node, error) {
	if node := c.pendingNode(nodeClaimName); node != nil {
		return node, nil
	}
	node := &corev1.Node{}
	if err := read.Get(ctx, client.ObjectKey{Name: nodeClaimName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting node %q, %w", nodeClaimName, err)
	}
	if node.Labels[NodeClaimLabelKey] != nodeClaimName {
		return nil, cloudprovider.NewCreateError(fmt.Errorf("node %q exists and is not a sim instance", nodeClaimName),
			"NodeNameTaken", "A node with the NodeClaim's name exists and wasn't launched for it")
	}
	return node, nil
}

// Delete terminates the NodeClaim's instance: it marks the Node terminated and deletes it. It returns
// NodeClaimNotFound once the instance is terminated or its Node is gone.
func (c *CloudProvider) Delete(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	if c.cancelPending(nodeClaim.Name, nodeClaim.Status.ProviderID) {
		return nil
	}
	node, err := c.nodeForNodeClaim(ctx, nodeClaim)
	if err != nil {
		return err
	}
	if node == nil || node.Annotations[TerminatedAnnotationKey] == "true" {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance of nodeclaim %q is terminated", nodeClaim.Name))
	}
	return c.terminate(ctx, node)
}

// terminate ends the instance a Node is: it marks the Node terminated, which makes the instance gone for
// Get, List and Delete at once, and deletes it.
func (c *CloudProvider) terminate(ctx context.Context, node *corev1.Node) error {
	patch := client.MergeFrom(node.DeepCopy())
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[TerminatedAnnotationKey] = "true"
	if err := c.client.Patch(ctx, node, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("marking node %q terminated, %w", node.Name, err)
	}
	if err := c.client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting node %q, %w", node.Name, err)
	}
	log.FromContext(ctx).V(1).Info("terminated instance", "Node", node.Name, "providerID", node.Spec.ProviderID)
	return nil
}

// nodeForNodeClaim finds the NodeClaim's instance by provider ID, or by name before it has one.
func (c *CloudProvider) nodeForNodeClaim(ctx context.Context, nodeClaim *v1.NodeClaim) (*corev1.Node, error) {
	if nodeClaim.Status.ProviderID != "" {
		return c.nodeByProviderID(ctx, nodeClaim.Status.ProviderID)
	}
	node, err := c.existing(ctx, c.reader, nodeClaim.Name)
	if cloudprovider.IsCreateError(err) {
		return nil, nil
	}
	return node, err
}

// Get returns the running (or still launching) instance with the provider ID.
func (c *CloudProvider) Get(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	if node := c.pendingByProviderID(providerID); node != nil {
		return nodeClaimFromNode(node), nil
	}
	node, err := c.nodeByProviderID(ctx, providerID)
	if err != nil {
		return nil, err
	}
	if node == nil || node.Annotations[TerminatedAnnotationKey] == "true" {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %q", providerID))
	}
	return nodeClaimFromNode(node), nil
}

// nodeByProviderID returns the sim Node with the provider ID, or nil. The cache (Client) answers for an
// instance it shows; only a miss is asked of the API server (Reader), since a cache that lags would report
// a running instance gone. Drift and garbage collection ask for every claim, and through Reader alone each
// question was a list of every Node from etcd: 737 in one run of BenchmarkPlanFidelity/500.
func (c *CloudProvider) nodeByProviderID(ctx context.Context, providerID string) (*corev1.Node, error) {
	id, ok := instanceID(providerID)
	if !ok {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("%q is not a sim provider ID", providerID))
	}
	if node, err := findInstance(ctx, c.client, id, providerID); err != nil || node != nil {
		return node, err
	}
	return findInstance(ctx, c.reader, id, providerID)
}

// findInstance returns the Node read finds with the instance ID and provider ID, or nil.
func findInstance(ctx context.Context, read client.Reader, id, providerID string) (*corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := read.List(ctx, nodes, client.MatchingLabels{InstanceIDLabelKey: id}); err != nil {
		return nil, fmt.Errorf("listing nodes of instance %q, %w", id, err)
	}
	for i := range nodes.Items {
		if nodes.Items[i].Spec.ProviderID == providerID {
			return &nodes.Items[i], nil
		}
	}
	return nil, nil
}

// List returns every running or launching instance, by NodeClaim name, including instances no NodeClaim
// refers to.
func (c *CloudProvider) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	nodes := &corev1.NodeList{}
	if err := c.reader.List(ctx, nodes, client.HasLabels{NodeClaimLabelKey}); err != nil {
		return nil, fmt.Errorf("listing sim nodes, %w", err)
	}
	var out []*v1.NodeClaim
	seen := map[string]bool{}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if node.Annotations[TerminatedAnnotationKey] == "true" {
			continue
		}
		seen[node.Spec.ProviderID] = true
		out = append(out, nodeClaimFromNode(node))
	}
	for _, node := range c.pendingNodes() {
		if !seen[node.Spec.ProviderID] {
			out = append(out, nodeClaimFromNode(node))
		}
	}
	slices.SortFunc(out, func(a, b *v1.NodeClaim) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// GetInstanceTypes returns the catalog as nodes of the NodePool's EC2NodeClass have it (pods, reserved
// resources, eviction thresholds and ephemeral storage from its kubelet settings and block devices, see
// catalog.ForNodeClass), with offerings that are injected or recently failed marked unavailable. A pool
// whose node class isn't found gets the catalog as it is; launching for it fails.
func (c *CloudProvider) GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	injected, err := c.injectedCapacity(ctx)
	if err != nil {
		return nil, err
	}
	its := c.typesFor(c.poolNodeClass(ctx, nodePool))
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*cloudprovider.InstanceType, 0, len(its))
	for _, it := range its {
		cp := *it
		cp.Offerings = slices.Clone(it.Offerings)
		for i := range cp.Offerings {
			o := &cp.Offerings[i]
			k := offeringKey{instanceType: it.Name, zone: o.Zone, capacityType: o.CapacityType}
			if injected.has(k) || c.capacity.isUnavailable(k, now) {
				o.Available = false
			}
		}
		out = append(out, &cp)
	}
	return out, nil
}

// poolNodeClass returns the pool's EC2NodeClass, or nil when it has none or it can't be read.
func (c *CloudProvider) poolNodeClass(ctx context.Context, nodePool *v1.NodePool) *awsv1.EC2NodeClass {
	if nodePool == nil {
		return nil
	}
	ref := nodePool.Spec.Template.Spec.NodeClassRef
	if ref == nil || ref.Group != awsv1.Group || ref.Kind != ec2NodeClassKind {
		return nil
	}
	nodeClass := &awsv1.EC2NodeClass{}
	if err := c.client.Get(ctx, objectKey(ref.Name), nodeClass); err != nil {
		return nil
	}
	return nodeClass
}

// typesFor returns the catalog as nodes of the node class have it (the catalog itself for nil, unless
// VM_MEMORY_OVERHEAD_PERCENT differs from the catalog's assumption), computed
// once per node class generation.
func (c *CloudProvider) typesFor(nodeClass *awsv1.EC2NodeClass) cloudprovider.InstanceTypes {
	if nodeClass == nil && c.vmOverhead == catalog.DefaultVMMemoryOverheadPercent {
		return c.catalog
	}
	var key nodeClassKey
	if nodeClass != nil {
		key = nodeClassKey{name: nodeClass.Name, uid: string(nodeClass.UID), generation: nodeClass.Generation}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if its, ok := c.byNodeClass[key]; ok {
		return its
	}
	its := catalog.ForNodeClassWithVMOverhead(c.catalog, nodeClass, c.vmOverhead)
	if len(c.byNodeClass) >= maxCachedNodeClasses {
		clear(c.byNodeClass)
	}
	c.byNodeClass[key] = its
	return its
}

// nodeClassKey identifies one version of a node class's spec.
type nodeClassKey struct {
	name, uid  string
	generation int64
}

// maxCachedNodeClasses bounds the per-node-class catalogs kept; the cache starts over when it is full.
const maxCachedNodeClasses = 64

// IsDrifted returns the value of the instance's DriftAnnotationKey annotation ("" without it): in the
// simulation an instance drifts from its node class only when a user says so. An instance that is gone is
// a NodeClaimNotFoundError.
func (c *CloudProvider) IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	node, err := c.nodeByProviderID(ctx, nodeClaim.Status.ProviderID)
	if err != nil {
		return "", err
	}
	if node == nil {
		return "", cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %q", nodeClaim.Status.ProviderID))
	}
	return cloudprovider.DriftReason(node.Annotations[DriftAnnotationKey]), nil
}

// RepairPolicies are the AWS provider's (catalog.EC2RepairPolicies).
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	return catalog.EC2RepairPolicies()
}
