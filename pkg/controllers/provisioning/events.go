package provisioning

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// NominatedEvent says where a pending pod will go: an existing node or a NodeClaim being launched.
func NominatedEvent(pod *corev1.Pod, kind, name string) events.Event {
	return events.Event{
		InvolvedObject: pod,
		Type:           events.Normal,
		Reason:         "Nominated",
		Message:        "Pod should schedule on: " + kind + "/" + name,
		DedupeValues:   []string{string(pod.UID), kind, name},
	}
}

// FailedSchedulingEvent says why no NodePool could take the pod, one reason per pool.
func FailedSchedulingEvent(pod *corev1.Pod, reasons []solver.Reason) events.Event {
	parts := make([]string, 0, len(reasons))
	for _, r := range reasons {
		parts = append(parts, r.String())
	}
	return events.Event{
		InvolvedObject: pod,
		Type:           events.Warning,
		Reason:         "FailedScheduling",
		Message:        "Failed to schedule pod, " + strings.Join(parts, "; "),
		DedupeValues:   []string{string(pod.UID), strings.Join(parts, "; ")},
		DedupeTimeout:  5 * time.Minute,
	}
}

// PodIgnoredEvent says why provisioning leaves a pending pod alone (see splitIgnored). It has upstream's
// reason and message shape, so alerts on FailedScheduling events see it.
func PodIgnoredEvent(pod *corev1.Pod, err error) events.Event {
	return events.Event{
		InvolvedObject: pod,
		Type:           events.Warning,
		Reason:         "FailedScheduling",
		Message:        "Failed to schedule pod, ignoring pod, " + err.Error(),
		DedupeValues:   []string{string(pod.UID), err.Error()},
		DedupeTimeout:  5 * time.Minute,
	}
}

// InstanceTypesUnresolvedEvent says a NodePool was left out of a provisioning pass because the cloud
// provider could not list what it may launch.
func InstanceTypesUnresolvedEvent(pool *v1.NodePool, err error) events.Event {
	return events.Event{
		InvolvedObject: pool,
		Type:           events.Warning,
		Reason:         "InstanceTypesUnresolved",
		Message:        "Skipping NodePool, unable to resolve instance types: " + err.Error(),
		DedupeValues:   []string{string(pool.UID), err.Error()},
		DedupeTimeout:  5 * time.Minute,
	}
}
