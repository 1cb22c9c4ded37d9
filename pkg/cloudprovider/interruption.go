package cloudprovider

import (
	"context"
	"errors"
	"time"
)

// InterruptionKind is what happened, or is about to happen, to an instance. The values are the message
// kinds of Karpenter's AWS interruption queue.
type InterruptionKind string

// Interruption kinds.
const (
	// InterruptionSpot warns that a spot instance is about to be reclaimed (two minutes on EC2).
	InterruptionSpot InterruptionKind = "spot_interrupted"
	// InterruptionRebalance says a spot instance is at elevated risk of interruption; informational.
	InterruptionRebalance InterruptionKind = "rebalance_recommendation"
	// InterruptionScheduledChange announces maintenance that will disturb the instance.
	InterruptionScheduledChange InterruptionKind = "scheduled_change"
	// InterruptionStopped says the instance is stopping or stopped.
	InterruptionStopped InterruptionKind = "instance_stopped"
	// InterruptionTerminated says the instance is shutting down or terminated.
	InterruptionTerminated InterruptionKind = "instance_terminated"
	// InterruptionCapacityReservation says EC2 is reclaiming the capacity reservation the instance runs in.
	InterruptionCapacityReservation InterruptionKind = "capacity_reservation_interrupted"
	// InterruptionNoOp is a message about nothing Lathe acts on (an event type or state it ignores); it is
	// counted and deleted.
	InterruptionNoOp InterruptionKind = "no_op"
	// InterruptionInstanceStatus says the instance's own status check has been failing; the instance is
	// replaced without waiting for a graceful drain.
	InterruptionInstanceStatus InterruptionKind = "instance_status"
	// InterruptionSystemStatus says the status check of the host under the instance has been failing; as
	// for InterruptionInstanceStatus, the instance is replaced without waiting for a graceful drain.
	InterruptionSystemStatus InterruptionKind = "system_status"
	// InterruptionEventStatus says maintenance is scheduled for the instance; it is cordoned, drained
	// and replaced.
	InterruptionEventStatus InterruptionKind = "event_status"
)

// InterruptionMessage is one message a provider received about one of its instances.
type InterruptionMessage struct {
	// ID identifies the message for DeleteInterruption.
	ID string
	// Kind says what happened.
	Kind InterruptionKind
	// ProviderID is the instance's provider ID; empty when the provider doesn't know the instance (the
	// message is then only counted and deleted).
	ProviderID string
	// Time is when the provider raised or received the message; the time it waited is measured from it.
	Time time.Time
	// Err says the message could not be read; it is deleted unhandled (and not counted as received), so
	// that it is not received again forever.
	Err error
}

// InterruptionSource is implemented by providers that learn of interruptions (spot reclaims, maintenance,
// state changes) from their cloud. It is optional: the interruption controller runs only for providers
// that implement it.
type InterruptionSource interface {
	// ReceiveInterruptions returns the messages not yet deleted, oldest first. A message is returned again
	// by later calls until DeleteInterruption is called for it, so one that failed to be handled is retried.
	ReceiveInterruptions(ctx context.Context) ([]InterruptionMessage, error)
	// DeleteInterruption acknowledges a handled message. Deleting an unknown ID is not an error.
	DeleteInterruption(ctx context.Context, id string) error
}

// UnhealthyInstance is one failing health check of one of the provider's instances.
type UnhealthyInstance struct {
	// ProviderID is the instance's provider ID.
	ProviderID string
	// Kind is InterruptionInstanceStatus, InterruptionSystemStatus or InterruptionEventStatus.
	Kind InterruptionKind
	// Category names the failing check as the provider's API does; it labels the unhealthy count.
	Category string
	// Since is when the check started failing.
	Since time.Time
}

// ErrNotPermitted is wrapped by an InstanceHealthSource's error when the provider's credentials don't
// allow reading instance health: the health controller logs it and keeps polling.
var ErrNotPermitted = errors.New("not permitted")

// InstanceHealthSource is implemented by providers that can poll their cloud for instances failing
// health checks or with maintenance scheduled. It is optional: the instance health controller runs only
// for providers that implement it.
type InstanceHealthSource interface {
	// UnhealthyInstances returns the cluster's instances failing a check now, one entry per instance
	// and check.
	UnhealthyInstances(ctx context.Context) ([]UnhealthyInstance, error)
}
