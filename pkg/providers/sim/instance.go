package sim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// newInstanceID returns "i-" and 17 random hex digits, the shape of an EC2 instance ID.
func newInstanceID() string {
	b := make([]byte, 9)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather than return an error)
	return "i-" + hex.EncodeToString(b)[:17]
}

// instanceID returns the instance ID of a sim provider ID (sim:///<zone>/<id>).
func instanceID(providerID string) (string, bool) {
	rest, ok := strings.CutPrefix(providerID, ProviderIDPrefix+"/")
	if !ok {
		return "", false
	}
	_, id, ok := strings.Cut(rest, "/")
	return id, ok && strings.HasPrefix(id, "i-")
}

// instanceLabels are the Node's labels that describe the instance, without the simulation's bookkeeping.
func instanceLabels(node *corev1.Node) map[string]string {
	out := map[string]string{}
	for k, v := range node.Labels {
		if k != v1.LabelHostname && !strings.HasPrefix(k, "sim.lathe.sh/") {
			out[k] = v
		}
	}
	return out
}

// launched returns a copy of the NodeClaim describing the instance the Node stands for.
func launched(nodeClaim *v1.NodeClaim, node *corev1.Node) *v1.NodeClaim {
	out := nodeClaim.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range instanceLabels(node) {
		out.Labels[k] = v
	}
	out.Status.ProviderID = node.Spec.ProviderID
	out.Status.ImageID = node.Annotations[ImageIDAnnotationKey]
	out.Status.Capacity = node.Status.Capacity.DeepCopy()
	out.Status.Allocatable = node.Status.Allocatable.DeepCopy()
	return out
}

// nodeClaimFromNode describes a running instance as a NodeClaim (for Get and List).
func nodeClaimFromNode(node *corev1.Node) *v1.NodeClaim {
	return launched(&v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
		Name:              node.Labels[NodeClaimLabelKey],
		CreationTimestamp: node.CreationTimestamp,
		DeletionTimestamp: node.DeletionTimestamp,
	}}, node)
}

// pendingLaunch is an instance whose Node hasn't appeared yet (LaunchDelay).
type pendingLaunch struct {
	node  *corev1.Node
	timer clock.Timer
}

// launch makes the Node appear, now or after the launch delay.
func (c *CloudProvider) launch(ctx context.Context, node *corev1.Node) error {
	if c.launchDelay <= 0 {
		return c.createNode(ctx, node)
	}
	node.CreationTimestamp = metav1.NewTime(c.clock.Now())
	c.mu.Lock()
	c.pending[node.Name] = &pendingLaunch{node: node}
	c.mu.Unlock()
	background := context.WithoutCancel(ctx)
	timer := c.timers.AfterFunc(c.launchDelay, func() { c.materialize(background, node.Name) })
	c.mu.Lock()
	if p, ok := c.pending[node.Name]; ok {
		p.timer = timer
	}
	c.mu.Unlock()
	return nil
}

// materialize creates the Node of a pending launch. It holds mu while writing so that a concurrent Delete
// either cancels the launch or finds the Node. It must not use the clock (see CloudProvider.mu). A Node
// that can't be written is a failed boot: the NodeClaim never registers and is replaced.
func (c *CloudProvider) materialize(ctx context.Context, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[name]
	if !ok {
		return
	}
	delete(c.pending, name)
	node := p.node.DeepCopy()
	node.CreationTimestamp = metav1.Time{}
	if err := c.createNode(ctx, node); err != nil && !errors.Is(err, errNodeExists) {
		log.FromContext(ctx).Error(err, "failed creating the node of a launched instance", "Node", name)
	}
}

// errNodeExists means a Node of the instance's name exists already.
var errNodeExists = errors.New("the instance's node exists")

// createNode writes the Node with its status (capacity, allocatable); errNodeExists when a Node of that name
// exists.
func (c *CloudProvider) createNode(ctx context.Context, node *corev1.Node) error {
	status := node.Status.DeepCopy()
	if err := c.client.Create(ctx, node); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return errNodeExists
		}
		return cloudprovider.NewCreateError(err, "NodeCreationFailed", "Creating the simulated instance's node failed")
	}
	if len(node.Status.Capacity) > 0 {
		return nil
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Status.Capacity, node.Status.Allocatable, node.Status.NodeInfo = status.Capacity, status.Allocatable, status.NodeInfo
	if err := c.client.Status().Patch(ctx, node, patch); err != nil {
		return cloudprovider.NewCreateError(err, "NodeCreationFailed", "Writing the simulated instance's capacity failed")
	}
	return nil
}

func (c *CloudProvider) pendingNode(name string) *corev1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pending[name]; ok {
		return p.node.DeepCopy()
	}
	return nil
}

func (c *CloudProvider) pendingByProviderID(providerID string) *corev1.Node {
	for _, node := range c.pendingNodes() {
		if node.Spec.ProviderID == providerID {
			return node
		}
	}
	return nil
}

func (c *CloudProvider) pendingNodes() []*corev1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*corev1.Node, 0, len(c.pending))
	for _, p := range c.pending {
		out = append(out, p.node.DeepCopy())
	}
	return out
}

// cancelPending cancels the NodeClaim's launch if its Node hasn't appeared yet, and reports whether it did.
func (c *CloudProvider) cancelPending(name, providerID string) bool {
	c.mu.Lock()
	p, ok := c.pending[name]
	if ok && (providerID == "" || p.node.Spec.ProviderID == providerID) {
		delete(c.pending, name)
	}
	c.mu.Unlock()
	if !ok || (providerID != "" && p.node.Spec.ProviderID != providerID) {
		return false
	}
	if p.timer != nil {
		p.timer.Stop() // outside mu: the FakeClock's Stop takes the lock its callbacks run under
	}
	return true
}

// defaultZones are the zones the default catalog offers: <region>a, b and c.
func defaultZones(region string) []string {
	return []string{region + "a", region + "b", region + "c"}
}

// catalogZones are the distinct zones of the catalog's offerings, sorted.
func catalogZones(its cloudprovider.InstanceTypes) []string {
	var zones []string
	for _, it := range its {
		zones = append(zones, it.Offerings.Zones()...)
	}
	slices.Sort(zones)
	return slices.Compact(zones)
}

// zoneIDs gives the zones simulated IDs in order: us-east-1a, b, c become use1-az1, use1-az2, use1-az3. The
// region abbreviation is its first part, the initials of its middle parts and its number (AWS's real
// mapping differs per account).
func zoneIDs(region string, zones []string) map[string]string {
	parts := strings.Split(region, "-")
	abbrev := parts[0]
	for _, p := range parts[1:] {
		if _, err := strconv.Atoi(p); err == nil {
			abbrev += p
		} else if p != "" {
			abbrev += p[:1]
		}
	}
	out := make(map[string]string, len(zones))
	for i, zone := range zones {
		out[zone] = abbrev + "-az" + strconv.Itoa(i+1)
	}
	return out
}
