package nomination

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// The kube-scheduler checks a hard topology spread constraint on a Node counting the pods nominated to that
// Node as if they ran there, and the pods nominated to Nodes of the other domains not at all. Two pods of
// one spread group hinted to the same Node therefore make each other fail there (their zone counts both,
// the other zones none), the failed attempt clears the hint, and the pod goes wherever else it fits. So of
// the pods of a spread group planned onto one target, only the first (by creation time, then name) is
// hinted; the next one is once the first is bound. The pods of a group are alike, so the ones without a
// hint take the places the plan left for them, or their like, where the kube-scheduler puts them.

// siblingRecheck is how often a pod waiting behind a sibling is looked at again.
const siblingRecheck = time.Second

// behindSibling reports whether another pending pod of one of the pod's hard topology spread groups,
// nominated to the same target, comes first.
func (c *Controller) behindSibling(ctx context.Context, pod *corev1.Pod, target state.Target) (bool, error) {
	var groups []labels.Selector
	for _, tsc := range pod.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable != corev1.DoNotSchedule || tsc.LabelSelector == nil {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector); err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			groups = append(groups, sel)
		}
	}
	if len(groups) == 0 {
		return false, nil
	}
	for _, key := range c.nominations.NominatedWith(target) {
		if key.Namespace != pod.Namespace || key.Name == pod.Name {
			continue
		}
		other := &corev1.Pod{}
		if err := c.client.Get(ctx, key, other); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return false, err
			}
			continue
		}
		if other.Spec.NodeName != "" || other.DeletionTimestamp != nil || !comesFirst(other, pod) {
			continue
		}
		for _, sel := range groups {
			if sel.Matches(labels.Set(other.Labels)) {
				return true, nil
			}
		}
	}
	return false, nil
}

// comesFirst orders pods by creation time, then name.
func comesFirst(a, b *corev1.Pod) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}
