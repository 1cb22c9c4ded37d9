package health

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/events"
)

// ReasonNodeRepairBlocked is the reason of the events published when repair holds back.
const ReasonNodeRepairBlocked = "NodeRepairBlocked"

// repairBlockedDedupe is how long the same blocked repair is reported once.
const repairBlockedDedupe = 15 * time.Minute

// repairBlockedEvents say why the node isn't repaired, on the Node, its NodeClaim and its NodePool (nil
// for none).
func repairBlockedEvents(node *corev1.Node, nodeClaim *v1.NodeClaim, nodePool *v1.NodePool, message string) []events.Event {
	out := []events.Event{
		{InvolvedObject: node, Type: events.Warning, Reason: ReasonNodeRepairBlocked, Message: message, DedupeValues: []string{string(node.UID)}, DedupeTimeout: repairBlockedDedupe},
		{InvolvedObject: nodeClaim, Type: events.Warning, Reason: ReasonNodeRepairBlocked, Message: message, DedupeValues: []string{string(nodeClaim.UID)}, DedupeTimeout: repairBlockedDedupe},
	}
	if nodePool != nil {
		out = append(out, events.Event{InvolvedObject: nodePool, Type: events.Warning, Reason: ReasonNodeRepairBlocked, Message: message, DedupeValues: []string{string(nodePool.UID)}, DedupeTimeout: repairBlockedDedupe})
	}
	return out
}
