package termination

import (
	"fmt"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/events"
)

// ReasonFailedTermination is the reason of the event published when the cloud provider fails to terminate
// a NodeClaim's instance.
const ReasonFailedTermination = "FailedTermination"

// failedTerminationEvent says the cloud provider failed to terminate the claim's instance.
func failedTerminationEvent(nodeClaim *v1.NodeClaim, err error) events.Event {
	return events.Event{
		InvolvedObject: nodeClaim,
		Type:           events.Warning,
		Reason:         ReasonFailedTermination,
		Message:        fmt.Sprintf("Failed to terminate the instance, %s", err),
		DedupeValues:   []string{nodeClaim.Name},
	}
}
