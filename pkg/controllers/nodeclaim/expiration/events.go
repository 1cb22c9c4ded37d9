package expiration

import (
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/events"
)

// ReasonDisruptionTerminating is the reason of the event published when an expired claim is deleted, the
// one Karpenter uses for every disruption.
const ReasonDisruptionTerminating = "DisruptionTerminating"

// expiredEvent says the NodeClaim is being deleted because it expired.
func expiredEvent(nodeClaim *v1.NodeClaim) events.Event {
	return events.Event{
		InvolvedObject: nodeClaim,
		Type:           events.Normal,
		Reason:         ReasonDisruptionTerminating,
		Message:        "Disrupting NodeClaim: Expired",
		DedupeValues:   []string{string(nodeClaim.UID)},
	}
}
