package interruption

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/events"
)

// Reasons of the events published, as Karpenter's AWS provider names them.
const (
	ReasonSpotInterrupted             = "SpotInterrupted"
	ReasonSpotRebalanceRecommendation = "SpotRebalanceRecommendation"
	ReasonInstanceStopping            = "InstanceStopping"
	ReasonInstanceTerminating         = "InstanceTerminating"
	ReasonInstanceUnhealthy           = "InstanceUnhealthy"
	ReasonTerminatingOnInterruption   = "TerminatingOnInterruption"
	// ReasonCapacityReservationInterrupted is the AWS provider's CapacityReservationInstanceInterrupted.
	ReasonCapacityReservationInterrupted = "CapacityReservationInstanceInterrupted"
)

// notices are the warning published on receipt of each kind of message.
var notices = map[cloudprovider.InterruptionKind]struct{ reason, message string }{
	cloudprovider.InterruptionSpot:                {ReasonSpotInterrupted, "Spot interruption warning was triggered"},
	cloudprovider.InterruptionRebalance:           {ReasonSpotRebalanceRecommendation, "Spot rebalance recommendation was triggered"},
	cloudprovider.InterruptionStopped:             {ReasonInstanceStopping, "Instance is stopping"},
	cloudprovider.InterruptionTerminated:          {ReasonInstanceTerminating, "Instance is terminating"},
	cloudprovider.InterruptionScheduledChange:     {ReasonInstanceUnhealthy, "An unhealthy warning was triggered for the instance"},
	cloudprovider.InterruptionCapacityReservation: {ReasonCapacityReservationInterrupted, "Capacity Reservation interruption warning was triggered"},
	cloudprovider.InterruptionInstanceStatus:      {ReasonInstanceUnhealthy, "An unhealthy warning was triggered for the instance"},
	cloudprovider.InterruptionSystemStatus:        {ReasonInstanceUnhealthy, "An unhealthy warning was triggered for the instance"},
	cloudprovider.InterruptionEventStatus:         {ReasonInstanceUnhealthy, "An unhealthy warning was triggered for the instance"},
}

// noticeEvents say what the message announced, on the NodeClaim and its Node (nil for none).
func noticeEvents(kind cloudprovider.InterruptionKind, nodeClaim *v1.NodeClaim, node *corev1.Node) []events.Event {
	notice, ok := notices[kind]
	if !ok {
		return nil
	}
	return onBoth(nodeClaim, node, events.Warning, notice.reason, notice.message)
}

// terminatingEvents say the NodeClaim is being deleted because of the message.
func terminatingEvents(nodeClaim *v1.NodeClaim, node *corev1.Node) []events.Event {
	return onBoth(nodeClaim, node, events.Warning, ReasonTerminatingOnInterruption, "Interruption triggered termination for the NodeClaim")
}

func onBoth(nodeClaim *v1.NodeClaim, node *corev1.Node, eventType, reason, message string) []events.Event {
	event := func(obj runtime.Object, uid types.UID) events.Event {
		return events.Event{InvolvedObject: obj, Type: eventType, Reason: reason, Message: message, DedupeValues: []string{string(uid)}}
	}
	out := []events.Event{event(nodeClaim, nodeClaim.UID)}
	if node != nil {
		out = append(out, event(node, node.UID))
	}
	return out
}
