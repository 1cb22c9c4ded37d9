package pod

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lathe-autoscaler/lathe/pkg/metrics"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// Deps are the controller's dependencies.
type Deps struct {
	Client     client.Client
	Registerer prometheus.Registerer
}

// Controller observes a pod's startup duration when it becomes running and ready, if it saw the pod pending
// before. Pods already running when the controller starts (after a restart or a change of leader) were
// observed by the previous instance, or before Lathe ran; they are not observed again.
type Controller struct {
	client  client.Client
	startup prometheus.Observer

	mu      sync.Mutex
	pending map[types.NamespacedName]types.UID // pods (by UID) seen pending and not yet observed
}

// NewController returns the pod metrics controller.
func NewController(deps Deps) *Controller {
	startup := metrics.NewSummary(deps.Registerer, prometheus.SummaryOpts{
		Namespace:  metrics.Namespace,
		Subsystem:  "pods",
		Name:       "startup_duration_seconds",
		Help:       "The time from pod creation until the pod is running.",
		Objectives: metrics.SummaryObjectives(),
	}).WithLabelValues()
	return &Controller{client: deps.Client, startup: startup, pending: map[types.NamespacedName]types.UID{}}
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

// Reconcile remembers pending pods, observes the startup duration of a remembered pod once it is running
// and ready, and forgets pods that are gone or finished.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.client.Get(ctx, req.NamespacedName, pod); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	switch ready, isReady := readySince(pod); {
	case pod.Status.Phase == corev1.PodPending:
		c.remember(req.NamespacedName, pod.UID)
	case isReady && c.takePending(req.NamespacedName, pod.UID):
		c.startup.Observe(ready.Sub(pod.CreationTimestamp.Time).Seconds())
	case scheduling.IsTerminal(pod):
		c.forget(req.NamespacedName)
	}
	return reconcile.Result{}, nil
}

func (c *Controller) remember(name types.NamespacedName, uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[name] = uid
}

func (c *Controller) forget(name types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, name)
}

// takePending reports whether this pod (by UID) was seen pending and not observed yet, and forgets it.
func (c *Controller) takePending(name types.NamespacedName, uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[name] != uid {
		return false
	}
	delete(c.pending, name)
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
