package termination

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// stuckTerminatingAfter is how long past its deletion timestamp a terminating pod is waited for. After that
// the kubelet is taken to be gone and the pod no longer holds the drain up.
const stuckTerminatingAfter = time.Minute

// Reasons of the Drained condition.
const (
	reasonDrained  = "Drained"
	reasonDraining = "Draining"
)

// taint adds the karpenter.sh/disrupted:NoSchedule taint to the node unless it is there already.
func (c *Controller) taint(ctx context.Context, node *corev1.Node) error {
	if slices.ContainsFunc(node.Spec.Taints, v1.IsDisruptedTaint) {
		return nil
	}
	stored := node.DeepCopy()
	node.Spec.Taints = append(node.Spec.Taints, v1.DisruptedNoScheduleTaint)
	if err := fieldpatch.Patch(ctx, c.kube, node, stored, fieldpatch.Whole("spec", "taints")); err != nil {
		return fmt.Errorf("tainting node %s, %w", v1.DisruptedNoScheduleTaint.ToString(), err)
	}
	log.FromContext(ctx).Info("tainted node", "taint", v1.DisruptedNoScheduleTaint.ToString())
	return nil
}

// drain makes the pods that must leave the node leave: it deletes those whose grace period must start now
// to finish by the deadline, and evicts the rest, non-critical ones first. It returns how long to wait
// before the next pass, or zero once only pods that stay on the node are left (or the deadline passed and
// everything left was deleted).
func (c *Controller) drain(ctx context.Context, node *corev1.Node, nodeClaim *v1.NodeClaim, deadline *time.Time) (time.Duration, error) {
	pods, err := c.podsOnNode(ctx, node.Name)
	if err != nil {
		return 0, err
	}
	now := c.clock.Now()
	reason := disruptionReason(nodeClaim)
	leaving := slices.DeleteFunc(pods, func(p *corev1.Pod) bool { return staysOnNode(p, now) })
	var nextDeletion time.Time
	if deadline != nil {
		if nextDeletion, err = c.deleteExpiringPods(ctx, leaving, *deadline, now, reason); err != nil {
			return 0, err
		}
		if deadlinePassed(deadline, now) {
			leaving = nil // everything left was just deleted; the deadline doesn't wait for it to finish
		}
	}
	if len(leaving) == 0 {
		return 0, c.markDrained(ctx, node, nodeClaim)
	}
	// Pods due for deletion were just deleted, with a grace period that ends by the deadline; an eviction
	// would only ask for their pod's full grace period again.
	evictable := slices.DeleteFunc(firstToLeave(leaving), func(p *corev1.Pod) bool {
		return deadline != nil && dueForDeletion(p, *deadline, now)
	})
	evictErr := c.evictAll(ctx, evictable, now, reason)
	if err := c.markDraining(ctx, node, nodeClaim, len(leaving), deadline); err != nil {
		return 0, err
	}
	if evictErr != nil {
		return 0, evictErr
	}
	wait := c.backoff.next(node.UID)
	if !nextDeletion.IsZero() && nextDeletion.Sub(now) < wait {
		wait = nextDeletion.Sub(now)
	}
	return wait, nil
}

// podsOnNode lists the pods bound to the node.
func (c *Controller) podsOnNode(ctx context.Context, nodeName string) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.kube.List(ctx, list, client.MatchingFields{PodNodeNameField: nodeName}); err != nil {
		return nil, fmt.Errorf("listing pods on node, %w", err)
	}
	pods := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		pods = append(pods, &list.Items[i])
	}
	return pods, nil
}

// evictAll asks the Eviction API to evict each pod that isn't already terminating and isn't protected by
// the do-not-disrupt annotation. It goes through every pod even if one fails and returns the errors.
func (c *Controller) evictAll(ctx context.Context, pods []*corev1.Pod, now time.Time, reason string) error {
	var errs []error
	for _, pod := range pods {
		if !pod.DeletionTimestamp.IsZero() || doNotDisrupt(pod, now) {
			continue
		}
		if err := c.evict(ctx, pod, reason); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("draining node, %w", errors.Join(errs...))
	}
	return nil
}

// markDrained records that the drain has finished.
func (c *Controller) markDrained(ctx context.Context, node *corev1.Node, nodeClaim *v1.NodeClaim) error {
	c.backoff.forget(node.UID)
	changed, err := c.setCondition(ctx, nodeClaim, v1.ConditionTypeDrained, metav1.ConditionTrue, reasonDrained, "")
	if err != nil {
		return err
	}
	if changed {
		c.metrics.nodesDrained.WithLabelValues(node.Labels[v1.NodePoolLabelKey]).Inc()
		log.FromContext(ctx).Info("drained node")
	}
	return nil
}

// markDraining records that pods are still leaving the node.
func (c *Controller) markDraining(ctx context.Context, node *corev1.Node, nodeClaim *v1.NodeClaim, waiting int, deadline *time.Time) error {
	c.recorder.Publish(failedDrainingEvent(node, waiting))
	if deadline != nil {
		c.recorder.Publish(terminationGracePeriodExpiringEvent(node, *deadline))
	}
	_, err := c.setCondition(ctx, nodeClaim, v1.ConditionTypeDrained, metav1.ConditionFalse, reasonDraining, "Pods are waiting to be evicted")
	return err
}

// disruptionReason is the reason of the NodeClaim's DisruptionReason condition, for the pods drained metric;
// empty when the node isn't being disrupted (a manual deletion, for example).
func disruptionReason(nodeClaim *v1.NodeClaim) string {
	if nodeClaim == nil {
		return ""
	}
	if cond := meta.FindStatusCondition(nodeClaim.Status.Conditions, v1.ConditionTypeDisruptionReason); cond != nil {
		return cond.Reason
	}
	return ""
}

// staysOnNode reports whether the pod is left on the node: it is finished, is the node's own (DaemonSet
// and mirror pods), tolerates the disrupted taint, or has been terminating for so long that its kubelet is
// taken to be gone.
func staysOnNode(pod *corev1.Pod, now time.Time) bool {
	return scheduling.IsTerminal(pod) || scheduling.IsDaemonSetPod(pod) || scheduling.IsMirrorPod(pod) || scheduling.ToleratesDisruptedTaint(pod) ||
		(!pod.DeletionTimestamp.IsZero() && now.Sub(pod.DeletionTimestamp.Time) > stuckTerminatingAfter)
}

// doNotDisrupt reports whether the karpenter.sh/do-not-disrupt annotation protects the pod from eviction
// now: "true" always does, a duration does until that long after the pod started. Other values don't.
func doNotDisrupt(pod *corev1.Pod, now time.Time) bool {
	value, ok := pod.Annotations[v1.DoNotDisruptAnnotationKey]
	if !ok {
		return false
	}
	if value == "true" {
		return true
	}
	d, err := time.ParseDuration(value)
	if err != nil || d <= 0 {
		return false
	}
	start := pod.CreationTimestamp.Time
	if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.Time
	}
	return now.Before(start.Add(d))
}

// firstToLeave returns the pods evicted in this pass, in a new slice: the non-critical ones while there are
// any, then the system-critical ones, so that cluster services outlive the workloads that depend on them.
func firstToLeave(pods []*corev1.Pod) []*corev1.Pod {
	nonCritical := slices.DeleteFunc(slices.Clone(pods), isCritical)
	if len(nonCritical) > 0 {
		return nonCritical
	}
	return slices.Clone(pods)
}

func isCritical(pod *corev1.Pod) bool {
	return pod.Spec.PriorityClassName == "system-node-critical" || pod.Spec.PriorityClassName == "system-cluster-critical"
}
