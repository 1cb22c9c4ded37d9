package lifecycle

import (
	"fmt"
	"time"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/events"
)

// Event reasons published by this package (Karpenter's names).
const (
	EventReasonInsufficientCapacity     = "InsufficientCapacityError"
	EventReasonNodeClassNotReady        = "NodeClassNotReady"
	EventReasonUnregisteredTaintMissing = "UnregisteredTaintMissing"
)

// InsufficientCapacityErrorEvent says the claim couldn't launch for lack of capacity and is deleted.
func InsufficientCapacityErrorEvent(nodeClaim *v1.NodeClaim, err error) events.Event {
	return events.Event{
		InvolvedObject: nodeClaim.DeepCopy(),
		Type:           events.Warning,
		Reason:         EventReasonInsufficientCapacity,
		Message:        truncate(fmt.Sprintf("NodeClaim %s event: %s", nodeClaim.Name, err)),
		DedupeValues:   []string{string(nodeClaim.UID)},
	}
}

// NodeClassNotReadyEvent says the claim's node class can't be used yet.
func NodeClassNotReadyEvent(nodeClaim *v1.NodeClaim, err error) events.Event {
	return events.Event{
		InvolvedObject: nodeClaim.DeepCopy(),
		Type:           events.Warning,
		Reason:         EventReasonNodeClassNotReady,
		Message:        truncate(fmt.Sprintf("NodeClaim %s event: %s", nodeClaim.Name, err)),
		DedupeValues:   []string{string(nodeClaim.UID)},
	}
}

// UnregisteredTaintMissingEvent says the claim's Node registered without the karpenter.sh/unregistered
// taint, so pods may have landed on it before Karpenter synced its labels and taints.
func UnregisteredTaintMissingEvent(nodeClaim *v1.NodeClaim) events.Event {
	return events.Event{
		InvolvedObject: nodeClaim.DeepCopy(),
		Type:           events.Warning,
		Reason:         EventReasonUnregisteredTaintMissing,
		Message: fmt.Sprintf("Missing %s taint which prevents registration related race conditions on Karpenter-managed nodes",
			v1.UnregisteredNoExecuteTaint.ToString()),
		DedupeValues:  []string{string(nodeClaim.UID)},
		DedupeTimeout: time.Minute,
	}
}
