package disruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/events"
)

// Event reasons, as upstream Karpenter names them.
const (
	ReasonDisruptionBlocked             = "DisruptionBlocked"
	ReasonDisruptionLaunching           = "DisruptionLaunching"
	ReasonDisruptionWaitingReadiness    = "DisruptionWaitingReadiness"
	ReasonDisruptionTerminating         = "DisruptionTerminating"
	ReasonUnconsolidatable              = "Unconsolidatable"
	ReasonInvalidDoNotDisruptAnnotation = "InvalidDoNotDisruptAnnotation"
	ReasonConsolidationApproved         = "ConsolidationApproved"
)

// onNodeAndClaim returns the event for the node and for its claim.
func onNodeAndClaim(node *corev1.Node, claim *v1.NodeClaim, typ, reason, msg string, dedupe time.Duration) []events.Event {
	var out []events.Event
	if node != nil {
		out = append(out, events.Event{InvolvedObject: node, Type: typ, Reason: reason, Message: msg, DedupeValues: []string{node.Name, msg}, DedupeTimeout: dedupe})
	}
	if claim != nil {
		out = append(out, events.Event{InvolvedObject: claim, Type: typ, Reason: reason, Message: msg, DedupeValues: []string{claim.Name, msg}, DedupeTimeout: dedupe})
	}
	return out
}

// blockedEvent says why a node cannot be disrupted.
func blockedEvent(b Blocked) []events.Event {
	return onNodeAndClaim(b.Node, b.NodeClaim, events.Normal, ReasonDisruptionBlocked, b.Reason, 15*time.Minute)
}

// poolBlockedEvent says a pool's budgets allow no disruption for the reason.
func poolBlockedEvent(pool *v1.NodePool, reason v1.DisruptionReason, b Budget) events.Event {
	msg := fmt.Sprintf("No allowed disruptions for disruption reason %s due to blocking budget", reason)
	if b.Err != nil {
		msg = fmt.Sprintf("No allowed disruptions for disruption reason %s: a budget cannot be read (%v)", reason, b.Err)
	}
	return events.Event{InvolvedObject: pool, Type: events.Normal, Reason: ReasonDisruptionBlocked, Message: msg,
		DedupeValues: []string{pool.Name, msg}, DedupeTimeout: time.Minute}
}

// unconsolidatableEvent says why consolidation keeps a node.
func unconsolidatableEvent(c *Candidate, msg string) []events.Event {
	return onNodeAndClaim(c.Node, c.NodeClaim, events.Normal, ReasonUnconsolidatable, msg, 15*time.Minute)
}

// launchingEvent is published on a replacement claim.
func launchingEvent(claim *v1.NodeClaim, reason v1.DisruptionReason) events.Event {
	return events.Event{InvolvedObject: claim, Type: events.Normal, Reason: ReasonDisruptionLaunching,
		Message: fmt.Sprintf("Launching NodeClaim: %s", reason), DedupeValues: []string{claim.Name, string(reason)}}
}

// waitingReadinessEvent is published on a replacement claim that has not initialized yet.
func waitingReadinessEvent(claim *v1.NodeClaim) events.Event {
	return events.Event{InvolvedObject: claim, Type: events.Normal, Reason: ReasonDisruptionWaitingReadiness,
		Message: "Waiting on readiness to continue disruption", DedupeValues: []string{claim.Name}}
}

// terminatingEvents are published on a candidate as its claim is deleted.
func terminatingEvents(c *Candidate, reason v1.DisruptionReason) []events.Event {
	var out []events.Event
	out = append(out, events.Event{InvolvedObject: c.Node, Type: events.Normal, Reason: ReasonDisruptionTerminating,
		Message: fmt.Sprintf("Disrupting Node: %s", reason), DedupeValues: []string{c.Node.Name, string(reason)}})
	out = append(out, events.Event{InvolvedObject: c.NodeClaim, Type: events.Normal, Reason: ReasonDisruptionTerminating,
		Message: fmt.Sprintf("Disrupting NodeClaim: %s", reason), DedupeValues: []string{c.NodeClaim.Name, string(reason)}})
	return out
}

// invalidAnnotationEvent says a pod's do-not-disrupt annotation is ignored.
func invalidAnnotationEvent(a InvalidAnnotation) events.Event {
	msg := fmt.Sprintf("Invalid %s annotation: %v", v1.DoNotDisruptAnnotationKey, a.Err)
	return events.Event{InvolvedObject: a.Pod, Type: events.Warning, Reason: ReasonInvalidDoNotDisruptAnnotation, Message: msg,
		DedupeValues: []string{string(a.Pod.UID), msg}, DedupeTimeout: 15 * time.Minute}
}

// consolidationApprovedEvents are published for a move a Balanced pool approved: on the node and its claim
// for a single-node move, on the pool for a multi-node one.
func consolidationApprovedEvents(m Move) []events.Event {
	msg := m.Score.String()
	if m.Candidate != nil {
		return onNodeAndClaim(m.Candidate.Node, m.Candidate.NodeClaim, events.Normal, ReasonConsolidationApproved, msg, 0)
	}
	return []events.Event{{InvolvedObject: m.NodePool, Type: events.Normal, Reason: ReasonConsolidationApproved, Message: msg,
		DedupeValues: []string{m.NodePool.Name, msg}}}
}
