package sim

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// InterruptionKind is what happened to an instance: the provider boundary's kinds, which are named like
// the AWS interruption queue's message kinds.
type InterruptionKind = cloudprovider.InterruptionKind

// Interruption kinds.
const (
	// InterruptionSpot is an EC2 Spot Instance Interruption Warning.
	InterruptionSpot = cloudprovider.InterruptionSpot
	// InterruptionRebalance is an EC2 Instance Rebalance Recommendation.
	InterruptionRebalance = cloudprovider.InterruptionRebalance
	// InterruptionScheduledChange is an AWS Health scheduled change (e.g. maintenance) for the instance.
	InterruptionScheduledChange = cloudprovider.InterruptionScheduledChange
	// InterruptionStopping is an EC2 Instance State-change Notification to stopping or stopped.
	InterruptionStopping = cloudprovider.InterruptionStopped
	// InterruptionTerminating is an EC2 Instance State-change Notification to shutting-down or terminated.
	InterruptionTerminating = cloudprovider.InterruptionTerminated
)

var _ cloudprovider.InterruptionSource = (*CloudProvider)(nil)

// Interruption is one pending interruption message.
type Interruption struct {
	Kind       InterruptionKind
	ProviderID string
	// NodeClaim is the name of the NodeClaim the instance was launched for.
	NodeClaim string
	// InstanceType, Zone and CapacityType describe the interrupted offering.
	InstanceType, Zone, CapacityType string
	// Time the interruption was raised, on the provider's clock.
	Time time.Time
}

// Interrupt raises an interruption for the running instance with the provider ID, to be picked up through
// Interruptions. It does not change the instance itself (a real spot interruption terminates it two minutes
// later; here the interruption controller is expected to replace it first). As the AWS interruption handler
// does, a spot interruption also marks the instance's offering unavailable for UnavailableOfferingsTTL. It
// returns a NodeClaimNotFoundError for an unknown instance.
func (c *CloudProvider) Interrupt(ctx context.Context, providerID string, kind InterruptionKind) error {
	nodeClaim, err := c.Get(ctx, providerID)
	if err != nil {
		return fmt.Errorf("finding interrupted instance, %w", err)
	}
	now := c.clock.Now()
	interruption := Interruption{
		Kind:         kind,
		ProviderID:   providerID,
		NodeClaim:    nodeClaim.Name,
		InstanceType: nodeClaim.Labels[v1.LabelInstanceType],
		Zone:         nodeClaim.Labels[v1.LabelTopologyZone],
		CapacityType: nodeClaim.Labels[v1.CapacityTypeLabelKey],
		Time:         now,
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastInterruptionID++
	c.interruptions = append(c.interruptions, queuedInterruption{id: strconv.FormatUint(c.lastInterruptionID, 10), Interruption: interruption})
	if kind == InterruptionSpot {
		k := offeringKey{instanceType: interruption.InstanceType, zone: interruption.Zone, capacityType: v1.CapacityTypeSpot}
		c.capacity.markUnavailable(k, now.Add(UnavailableOfferingsTTL))
	}
	return nil
}

// queuedInterruption is an interruption waiting to be deleted from the simulated queue.
type queuedInterruption struct {
	id string
	Interruption
}

// Interruptions returns the pending interruptions, oldest first, and forgets them: like receiving and
// deleting queue messages at once, each is handed out once. They live in memory only.
func (c *CloudProvider) Interruptions() []Interruption {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Interruption, 0, len(c.interruptions))
	for _, q := range c.interruptions {
		out = append(out, q.Interruption)
	}
	c.interruptions = nil
	return out
}

// ReceiveInterruptions returns the pending interruptions as messages, oldest first; each stays pending until
// DeleteInterruption acknowledges it (cloudprovider.InterruptionSource).
func (c *CloudProvider) ReceiveInterruptions(context.Context) ([]cloudprovider.InterruptionMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]cloudprovider.InterruptionMessage, 0, len(c.interruptions))
	for _, q := range c.interruptions {
		out = append(out, cloudprovider.InterruptionMessage{ID: q.id, Kind: q.Kind, ProviderID: q.ProviderID, Time: q.Time})
	}
	return out, nil
}

// DeleteInterruption forgets the pending interruption with the ID.
func (c *CloudProvider) DeleteInterruption(_ context.Context, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.interruptions = slices.DeleteFunc(c.interruptions, func(q queuedInterruption) bool { return q.id == id })
	return nil
}
