package termination

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lathe-autoscaler/lathe/pkg/events"
)

// Event reasons, under Karpenter's names.
const (
	ReasonEvicted                        = "Evicted"
	ReasonDisrupted                      = "Disrupted"
	ReasonFailedDraining                 = "FailedDraining"
	ReasonTerminationGracePeriodExpiring = "TerminationGracePeriodExpiring"
	ReasonFailedTermination              = "FailedTermination"
)

// evictedEvent says the pod was evicted from its node.
func evictedEvent(pod *corev1.Pod) events.Event {
	return events.Event{
		InvolvedObject: pod,
		Type:           events.Normal,
		Reason:         ReasonEvicted,
		Message:        "Evicted pod",
		DedupeValues:   []string{string(pod.UID)},
	}
}

// disruptedEvent says the pod was deleted, bypassing PDBs and do-not-disrupt, to meet its node's deadline.
func disruptedEvent(pod *corev1.Pod, graceSeconds int64, deadline time.Time) events.Event {
	return events.Event{
		InvolvedObject: pod,
		Type:           events.Normal,
		Reason:         ReasonDisrupted,
		Message: fmt.Sprintf("Deleting the pod to accommodate the terminationTime %s of the node. The pod was granted %d seconds of grace-period of its %d terminationGracePeriodSeconds. This bypasses the PDB of the pod and the do-not-disrupt annotation.",
			deadline.UTC().Format(time.RFC3339), graceSeconds, int64(podGracePeriod(pod)/time.Second)),
		DedupeValues: []string{string(pod.UID)},
	}
}

// failedDrainingEvent says pods are still waiting to leave the node.
func failedDrainingEvent(node *corev1.Node, waiting int) events.Event {
	return events.Event{
		InvolvedObject: node,
		Type:           events.Warning,
		Reason:         ReasonFailedDraining,
		Message:        fmt.Sprintf("Failed to drain node, %d pods are waiting to be evicted", waiting),
		DedupeValues:   []string{node.Name},
	}
}

// terminationGracePeriodExpiringEvent says when the node's remaining pods will be deleted regardless.
func terminationGracePeriodExpiringEvent(node *corev1.Node, deadline time.Time) events.Event {
	return events.Event{
		InvolvedObject: node,
		Type:           events.Warning,
		Reason:         ReasonTerminationGracePeriodExpiring,
		Message:        fmt.Sprintf("All pods will be deleted by %s", deadline.UTC().Format(time.RFC3339)),
		DedupeValues:   []string{node.Name},
	}
}

// failedTerminationEvent says the cloud provider failed to terminate the node's instance.
func failedTerminationEvent(node *corev1.Node, err error) events.Event {
	return events.Event{
		InvolvedObject: node,
		Type:           events.Warning,
		Reason:         ReasonFailedTermination,
		Message:        fmt.Sprintf("Failed to terminate the instance, %s", err),
		DedupeValues:   []string{node.Name},
	}
}
