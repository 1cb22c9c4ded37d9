// Package fake is a unit-test double for cloudprovider.CloudProvider. It keeps "instances" in memory,
// records every call, returns errors injected for the next call of a method, and can cap how many
// NodeClaims it creates. It is not the simulated provider used for end-to-end runs.
package fake

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// CloudProvider is the fake. Construct it with New; the zero value is not usable.
type CloudProvider struct {
	mu sync.Mutex

	// InstanceTypes is what GetInstanceTypes returns for every NodePool.
	InstanceTypes []*cloudprovider.InstanceType
	// InstanceTypeErrors, by NodePool name, is what GetInstanceTypes fails with for that pool, every time.
	InstanceTypeErrors map[string]error
	// Drifted is what IsDrifted returns for every NodeClaim.
	Drifted cloudprovider.DriftReason
	// AllowedCreateCalls caps successful creates; later calls fail with InsufficientCapacity. Negative means
	// unlimited.
	AllowedCreateCalls int

	created      map[string]*v1.NodeClaim // by provider ID
	calls        map[string]int
	createCalls  []*v1.NodeClaim
	deleteCalls  []*v1.NodeClaim
	nextErrors   map[string]error
	providerSeed int
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New returns a fake offering the given instance types.
func New(instanceTypes ...*cloudprovider.InstanceType) *CloudProvider {
	c := &CloudProvider{InstanceTypes: instanceTypes}
	c.Reset()
	return c
}

// Reset forgets instances, calls and injected errors, and lifts the create cap.
func (c *CloudProvider) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.created = map[string]*v1.NodeClaim{}
	c.calls = map[string]int{}
	c.createCalls, c.deleteCalls = nil, nil
	c.nextErrors = map[string]error{}
	c.AllowedCreateCalls = -1
	c.InstanceTypeErrors = nil
	c.Drifted = ""
	c.providerSeed = 0
}

// Method names for InjectError and Calls.
const (
	MethodCreate           = "Create"
	MethodDelete           = "Delete"
	MethodGet              = "Get"
	MethodList             = "List"
	MethodGetInstanceTypes = "GetInstanceTypes"
	MethodIsDrifted        = "IsDrifted"
)

// InjectError makes the next call of method return err (once).
func (c *CloudProvider) InjectError(method string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextErrors[method] = err
}

// Calls returns how many times method was called.
func (c *CloudProvider) Calls(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[method]
}

// CreateCalls returns copies of the NodeClaims passed to Create, in call order.
func (c *CloudProvider) CreateCalls() []*v1.NodeClaim {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.createCalls)
}

// DeleteCalls returns copies of the NodeClaims passed to Delete, in call order.
func (c *CloudProvider) DeleteCalls() []*v1.NodeClaim {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.deleteCalls)
}

// begin records a call and pops its injected error. The caller holds mu.
func (c *CloudProvider) begin(method string) error {
	c.calls[method]++
	err := c.nextErrors[method]
	delete(c.nextErrors, method)
	return err
}

// Create "launches" the cheapest instance type and offering the NodeClaim's requirements allow.
func (c *CloudProvider) Create(_ context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.createCalls = append(c.createCalls, nodeClaim.DeepCopy())
	if err := c.begin(MethodCreate); err != nil {
		return nil, err
	}
	if c.AllowedCreateCalls >= 0 && len(c.created) >= c.AllowedCreateCalls {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("create cap of %d reached", c.AllowedCreateCalls))
	}
	it, offering, err := c.choose(nodeClaim)
	if err != nil {
		return nil, err
	}
	c.providerSeed++
	out := nodeClaim.DeepCopy()
	out.Status.ProviderID = fmt.Sprintf("fake:///%s/%d", offering.Zone, c.providerSeed)
	out.Status.Capacity = it.Capacity.DeepCopy()
	out.Status.Allocatable = it.Allocatable()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range it.Requirements.Labels() {
		out.Labels[k] = v
	}
	out.Labels[v1.LabelInstanceType] = it.Name
	out.Labels[v1.LabelTopologyZone] = offering.Zone
	out.Labels[v1.CapacityTypeLabelKey] = offering.CapacityType
	c.created[out.Status.ProviderID] = out.DeepCopy()
	return out, nil
}

func (c *CloudProvider) choose(nodeClaim *v1.NodeClaim) (*cloudprovider.InstanceType, cloudprovider.Offering, error) {
	reqs, err := schedulingRequirements(nodeClaim)
	if err != nil {
		return nil, cloudprovider.Offering{}, err
	}
	ordered := cloudprovider.InstanceTypes(c.InstanceTypes).Compatible(reqs).OrderByPrice(reqs)
	for _, it := range ordered {
		if !scheduling.Fits(nodeClaim.Spec.Resources.Requests, it.Allocatable()) {
			continue
		}
		if o, ok := it.Offerings.Available().Compatible(reqs).Cheapest(); ok {
			return it, o, nil
		}
	}
	return nil, cloudprovider.Offering{}, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no compatible instance type for %q", nodeClaim.Name))
}

// Delete removes the instance, returning NodeClaimNotFound when it is already gone. A NodeClaim whose status
// has no provider ID yet is looked up by name, as a real provider finds an instance by the claim it was
// launched for.
func (c *CloudProvider) Delete(_ context.Context, nodeClaim *v1.NodeClaim) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deleteCalls = append(c.deleteCalls, nodeClaim.DeepCopy())
	if err := c.begin(MethodDelete); err != nil {
		return err
	}
	id := nodeClaim.Status.ProviderID
	if id == "" {
		id = c.providerIDOf(nodeClaim.Name)
	}
	if _, ok := c.created[id]; !ok || id == "" {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance of nodeclaim %q (%q)", nodeClaim.Name, id))
	}
	delete(c.created, id)
	return nil
}

// providerIDOf returns the provider ID of the instance launched for the named NodeClaim, or "". The caller
// holds mu.
func (c *CloudProvider) providerIDOf(nodeClaimName string) string {
	for id, nc := range c.created {
		if nc.Name == nodeClaimName {
			return id
		}
	}
	return ""
}

// Get returns the instance with the provider ID.
func (c *CloudProvider) Get(_ context.Context, providerID string) (*v1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.begin(MethodGet); err != nil {
		return nil, err
	}
	nc, ok := c.created[providerID]
	if !ok {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %q", providerID))
	}
	return nc.DeepCopy(), nil
}

// List returns every instance, ordered by provider ID.
func (c *CloudProvider) List(_ context.Context) ([]*v1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.begin(MethodList); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(c.created))
	for id := range c.created {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]*v1.NodeClaim, 0, len(ids))
	for _, id := range ids {
		out = append(out, c.created[id].DeepCopy())
	}
	return out, nil
}

// GetInstanceTypes returns InstanceTypes for every NodePool, or the pool's InstanceTypeErrors entry.
func (c *CloudProvider) GetInstanceTypes(_ context.Context, nodePool *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.begin(MethodGetInstanceTypes); err != nil {
		return nil, err
	}
	if nodePool != nil && c.InstanceTypeErrors[nodePool.Name] != nil {
		return nil, c.InstanceTypeErrors[nodePool.Name]
	}
	return slices.Clone(c.InstanceTypes), nil
}

// IsDrifted returns Drifted.
func (c *CloudProvider) IsDrifted(_ context.Context, _ *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.begin(MethodIsDrifted); err != nil {
		return "", err
	}
	return c.Drifted, nil
}

// RepairPolicies returns one policy: Ready=False for 30 minutes.
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * 60e9}}
}

// Name is "fake".
func (c *CloudProvider) Name() string { return "fake" }
