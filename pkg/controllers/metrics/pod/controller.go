package pod

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// Deps are the controller's dependencies.
type Deps struct {
	Client     client.Client
	Clock      clock.Clock
	Registerer prometheus.Registerer
	// Scheduling holds when the provisioner took pending pods up and decided on them (the cluster
	// state's), for karpenter_pods_provisioning_*. Nil: those stay empty.
	Scheduling *state.SchedulingTimes
}

// waitingRefresh is how often the unbound and unstarted times of a pending pod are brought up to date.
const waitingRefresh = 30 * time.Second

// Controller exports the pod metrics: every pod's karpenter_pods_state, the unbound and unstarted times of
// pending pods, and the startup and bound durations of pods it saw pending (pods already running or bound
// when the controller starts, after a restart or a change of leader, were observed by the previous
// instance, or before Lathe ran; they are not observed again).
type Controller struct {
	client     client.Client
	clock      clock.Clock
	metrics    *collectors
	scheduling *state.SchedulingTimes

	mu      sync.Mutex
	pending map[types.NamespacedName]types.UID // pods (by UID) seen pending and not yet observed started
	unbound map[types.NamespacedName]types.UID // pods (by UID) seen unbound and not yet observed bound
}

// NewController returns the pod metrics controller.
func NewController(deps Deps) *Controller {
	if deps.Scheduling == nil {
		deps.Scheduling = &state.SchedulingTimes{}
	}
	return &Controller{client: deps.Client, clock: deps.Clock, metrics: newCollectors(deps.Registerer), scheduling: deps.Scheduling,
		pending: map[types.NamespacedName]types.UID{}, unbound: map[types.NamespacedName]types.UID{}}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "pod.metrics" }

// Register watches pods.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	if err := builder.ControllerManagedBy(mgr).Named(c.Name()).For(&corev1.Pod{}).Complete(c); err != nil {
		return fmt.Errorf("building controller %s, %w", c.Name(), err)
	}
	return nil
}

// Reconcile updates the pod's series, and observes its bound and startup durations once, when it is first
// seen bound (or running and ready) after it was seen pending. A deleted pod's series go.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.client.Get(ctx, req.NamespacedName, pod); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.forget(req.NamespacedName)
			c.metrics.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	node := &corev1.Node{}
	if pod.Spec.NodeName != "" {
		if err := c.client.Get(ctx, types.NamespacedName{Name: pod.Spec.NodeName}, node); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("getting node of pod, %w", err)
		}
	}
	now := c.clock.Now()
	acked, decided, schedulable := c.scheduling.Times(req.NamespacedName)
	c.metrics.setState(pod, node)
	c.metrics.setWaiting(pod, now)
	c.metrics.setProvisioningWaiting(pod, now, acked, decided, schedulable)
	c.observeBound(req.NamespacedName, pod, schedulable)
	switch ready, isReady := readySince(pod); {
	case pod.Status.Phase == corev1.PodPending:
		c.remember(c.pending, req.NamespacedName, pod.UID)
		return reconcile.Result{RequeueAfter: waitingRefresh}, nil
	case isReady && c.take(c.pending, req.NamespacedName, pod.UID):
		c.metrics.startup.Observe(ready.Sub(pod.CreationTimestamp.Time).Seconds())
		if !schedulable.IsZero() {
			c.metrics.provisioningStartup.Observe(ready.Sub(schedulable).Seconds())
		}
		c.scheduling.Forget(req.NamespacedName)
	case scheduling.IsTerminal(pod):
		c.forget(req.NamespacedName)
	}
	return reconcile.Result{}, nil
}

// observeBound remembers an unbound pending pod, and observes its bound durations once it is bound (the
// provisioning one when the provisioner found it a place, at schedulable).
func (c *Controller) observeBound(name types.NamespacedName, pod *corev1.Pod, schedulable time.Time) {
	bound, scheduled := conditionTrue(pod, corev1.PodScheduled)
	switch {
	case pod.Status.Phase == corev1.PodPending && !scheduled:
		c.remember(c.unbound, name, pod.UID)
	case scheduled && c.take(c.unbound, name, pod.UID):
		c.metrics.bound.Observe(bound.Sub(pod.CreationTimestamp.Time).Seconds())
		if !schedulable.IsZero() {
			c.metrics.provisioningBound.Observe(bound.Sub(schedulable).Seconds())
		}
	}
}

func (c *Controller) remember(pods map[types.NamespacedName]types.UID, name types.NamespacedName, uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pods[name] = uid
}

func (c *Controller) forget(name types.NamespacedName) {
	c.scheduling.Forget(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, name)
	delete(c.unbound, name)
}

// take reports whether this pod (by UID) is in pods, and removes it.
func (c *Controller) take(pods map[types.NamespacedName]types.UID, name types.NamespacedName, uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pods[name] != uid {
		return false
	}
	delete(pods, name)
	return true
}

// readySince returns when a running pod became ready.
func readySince(pod *corev1.Pod) (time.Time, bool) {
	if pod.Status.Phase != corev1.PodRunning {
		return time.Time{}, false
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			return cond.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}
