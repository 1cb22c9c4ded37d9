package disruption

import (
	"fmt"
	"github.com/go-logr/logr"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// The pod predicates below follow upstream Karpenter's (core pkg/utils/pod): what must be rescheduled when
// a node goes, what the drain will evict, and what the do-not-disrupt annotation protects.

// active reports whether the pod neither finished nor is terminating.
func active(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && pod.DeletionTimestamp.IsZero()
}

// controllerKind is the kind of the pod's controller (as metav1.GetControllerOf finds it, without copying
// the reference), or "".
func controllerKind(pod *corev1.Pod) string {
	for i := range pod.OwnerReferences {
		if ref := &pod.OwnerReferences[i]; ref.Controller != nil && *ref.Controller {
			return ref.Kind
		}
	}
	return ""
}

// Reschedulable reports whether the pod needs room elsewhere when its node goes: it is active (or a
// terminating StatefulSet pod, whose replacement waits for it), and is not a DaemonSet's or a mirror pod.
func Reschedulable(pod *corev1.Pod) bool {
	kind := controllerKind(pod)
	return (active(pod) || (kind == "StatefulSet" && !pod.DeletionTimestamp.IsZero())) && kind != "DaemonSet" && kind != "Node"
}

// evictable reports whether the drain would evict the pod through the Eviction API (so PDBs apply to it).
func evictable(pod *corev1.Pod, now time.Time) bool {
	on, _ := doNotDisrupt(pod, now)
	return active(pod) && !toleratesDisruptedTaint(pod) && controllerKind(pod) != "Node" && !on
}

// doNotDisrupt reports whether the karpenter.sh/do-not-disrupt annotation protects the pod at now: "true"
// always does; a positive Go duration does until that long after the pod started (always while the start
// time is unknown). Any other value does not protect, and is returned as an error for an
// InvalidDoNotDisruptAnnotation event.
func doNotDisrupt(pod *corev1.Pod, now time.Time) (bool, error) {
	value, ok := pod.Annotations[v1.DoNotDisruptAnnotationKey]
	if !ok {
		return false, nil
	}
	if value == "true" {
		return true, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		return false, fmt.Errorf("failed to parse %q as a duration: %w", value, err)
	}
	if d <= 0 {
		return false, fmt.Errorf("duration %q must be positive", value)
	}
	if pod.Status.StartTime == nil {
		return true, nil
	}
	return now.Sub(pod.Status.StartTime.Time) < d, nil
}

// toleratesDisruptedTaint reports whether a toleration of the pod matches karpenter.sh/disrupted:NoSchedule.
func toleratesDisruptedTaint(pod *corev1.Pod) bool {
	taint := v1.DisruptedNoScheduleTaint
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(logr.Discard(), &taint, false) {
			return true
		}
	}
	return false
}

// EvictionCost is what evicting the pod costs, upstream's formula: 1, plus its pod-deletion-cost scaled so
// the extremes weigh about ±16 pods, plus its priority scaled likewise, clamped to [-10, 10].
func EvictionCost(pod *corev1.Pod) float64 {
	cost := 1.0
	if s, ok := pod.Annotations[corev1.PodDeletionCost]; ok {
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			cost += v / math.Pow(2, 27)
		}
	}
	if pod.Spec.Priority != nil {
		cost += float64(*pod.Spec.Priority) / math.Pow(2, 25)
	}
	return min(max(cost, -10), 10)
}

// lifetimeRemaining is the fraction of the claim's expireAfter still ahead of it, 1 without expiry.
func lifetimeRemaining(claim *v1.NodeClaim, now time.Time) float64 {
	if claim.Spec.ExpireAfter.Duration == nil {
		return 1
	}
	total := claim.Spec.ExpireAfter.Duration.Seconds()
	left := total - now.Sub(claim.CreationTimestamp.Time).Seconds()
	return min(max(left/total, 0), 1)
}
