package termination

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Backoff between drain passes of one node that hasn't finished draining.
const (
	drainBackoffBase = time.Second
	drainBackoffMax  = 10 * time.Second
)

// defaultPodGracePeriod is the API server's default terminationGracePeriodSeconds.
const defaultPodGracePeriod = 30 * time.Second

// evict asks the Eviction API to evict the pod. A pod that is gone, was replaced, or whose eviction a
// PodDisruptionBudget refuses (HTTP 429, or 500 when several budgets match) is not an error: the next pass
// tries again.
func (c *Controller) evict(ctx context.Context, pod *corev1.Pod, reason string) error {
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	}
	err := c.kube.SubResource("eviction").Create(ctx, pod, eviction)
	c.metrics.evictionRequests.WithLabelValues(strconv.Itoa(statusCode(err))).Inc()
	logger := log.FromContext(ctx).WithValues("Pod", klog.KObj(pod))
	switch {
	case err == nil:
		c.recorder.Publish(evictedEvent(pod))
		c.metrics.podsDrained.WithLabelValues(reason).Inc()
		logger.V(1).Info("evicted pod")
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil
	case apierrors.IsTooManyRequests(err), apierrors.IsInternalError(err):
		logger.V(1).Info("eviction refused", "error", err.Error())
		return nil
	default:
		return fmt.Errorf("evicting pod %s/%s, %w", pod.Namespace, pod.Name, err)
	}
}

// deleteExpiringPods deletes each pod whose grace period must begin now for it to finish by the deadline:
// a pod with terminationGracePeriodSeconds S is deleted at deadline − S with a grace period of the time left
// until the deadline (zero once it has passed). This bypasses PodDisruptionBudgets and do-not-disrupt. It
// returns the next time a pod falls due (or the deadline itself), zero when nothing is left to fall due.
func (c *Controller) deleteExpiringPods(ctx context.Context, pods []*corev1.Pod, deadline, now time.Time, reason string) (time.Time, error) {
	var next time.Time
	if now.Before(deadline) {
		next = deadline
	}
	var errs []error
	for _, pod := range pods {
		if !dueForDeletion(pod, deadline, now) {
			if deleteAt := deadline.Add(-podGracePeriod(pod)); deleteAt.Before(next) {
				next = deleteAt
			}
			continue
		}
		left := max(deadline.Sub(now).Truncate(time.Second), 0)
		if !pod.DeletionTimestamp.IsZero() && !pod.DeletionTimestamp.After(now.Add(left)) {
			continue // already terminating, and done in time
		}
		if err := c.deletePod(ctx, pod, left, deadline, reason); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return time.Time{}, fmt.Errorf("deleting pods to meet the termination deadline, %w", errors.Join(errs...))
	}
	return next, nil
}

// deletePod deletes the pod with the grace period.
func (c *Controller) deletePod(ctx context.Context, pod *corev1.Pod, grace time.Duration, deadline time.Time, reason string) error {
	seconds := int64(grace / time.Second)
	err := c.kube.Delete(ctx, pod, client.GracePeriodSeconds(seconds), client.Preconditions{UID: &pod.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting pod %s/%s, %w", pod.Namespace, pod.Name, err)
	}
	c.recorder.Publish(disruptedEvent(pod, seconds, deadline))
	c.metrics.podsDrained.WithLabelValues(reason).Inc()
	log.FromContext(ctx).V(1).Info("deleted pod to meet the termination deadline", "Pod", klog.KObj(pod), "gracePeriodSeconds", seconds)
	return nil
}

// dueForDeletion reports whether the pod's grace period has to start now for it to finish by the deadline.
func dueForDeletion(pod *corev1.Pod, deadline, now time.Time) bool {
	return !now.Before(deadline.Add(-podGracePeriod(pod)))
}

// podGracePeriod is the pod's terminationGracePeriodSeconds.
func podGracePeriod(pod *corev1.Pod) time.Duration {
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		return defaultPodGracePeriod
	}
	return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
}

// statusCode is the HTTP status of an API call's outcome, for the eviction request metric.
func statusCode(err error) int {
	if err == nil {
		return http.StatusOK
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return int(status.Status().Code)
	}
	return 0
}

// drainBackoff spaces out the drain passes of each node that keeps failing to finish: 1 s, 2 s, 4 s ...
// up to 10 s.
type drainBackoff struct {
	mu       sync.Mutex
	attempts map[types.UID]int
}

func newDrainBackoff() *drainBackoff { return &drainBackoff{attempts: map[types.UID]int{}} }

// next counts one more unfinished pass of the node and returns how long to wait before the next one.
func (b *drainBackoff) next(node types.UID) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.attempts[node]
	b.attempts[node] = n + 1
	wait := drainBackoffBase << min(n, 8)
	return min(wait, drainBackoffMax)
}

// forget resets the node's backoff.
func (b *drainBackoff) forget(node types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.attempts, node)
}
