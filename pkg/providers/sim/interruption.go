package sim

import (
	"context"
	"fmt"
	"time"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// InterruptionKind is what happened to an instance, named like the AWS interruption queue's message kinds.
type InterruptionKind string

// Interruption kinds.
const (
	// InterruptionSpot is an EC2 Spot Instance Interruption Warning.
	InterruptionSpot InterruptionKind = "spot_interrupted"
	// InterruptionRebalance is an EC2 Instance Rebalance Recommendation.
	InterruptionRebalance InterruptionKind = "rebalance_recommendation"
	// InterruptionScheduledChange is an AWS Health scheduled change (e.g. maintenance) for the instance.
	InterruptionScheduledChange InterruptionKind = "scheduled_change"
	// InterruptionStopping is an EC2 Instance State-change Notification to stopping or stopped.
	InterruptionStopping InterruptionKind = "instance_stopped"
	// InterruptionTerminating is an EC2 Instance State-change Notification to shutting-down or terminated.
	InterruptionTerminating InterruptionKind = "instance_terminated"
)

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
	c.interruptions = append(c.interruptions, interruption)
	if kind == InterruptionSpot {
		k := offeringKey{instanceType: interruption.InstanceType, zone: interruption.Zone, capacityType: v1.CapacityTypeSpot}
		c.capacity.markUnavailable(k, now.Add(UnavailableOfferingsTTL))
	}
	return nil
}

// Interruptions returns the pending interruptions, oldest first, and forgets them: like receiving and
// deleting queue messages, each is handed out once. They live in memory only.
func (c *CloudProvider) Interruptions() []Interruption {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.interruptions
	c.interruptions = nil
	return out
}
