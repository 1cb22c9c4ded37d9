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
)

// Deps are the controller's dependencies.
type Deps struct {
	Client     client.Client
	Registerer prometheus.Registerer
}

// Controller observes each pod's startup duration once, when it is first seen running and ready.
type Controller struct {
	client  client.Client
	startup prometheus.Observer

	mu       sync.Mutex
	observed map[types.NamespacedName]types.UID // the pod (by UID) already observed under each name
}

// NewController returns the pod metrics controller.
func NewController(deps Deps) *Controller {
	startup := metrics.Register(deps.Registerer, prometheus.NewSummary(prometheus.SummaryOpts{
		Namespace:  metrics.Namespace,
		Subsystem:  "pods",
		Name:       "startup_duration_seconds",
		Help:       "The time from pod creation until the pod is running.",
		Objectives: map[float64]float64{0: 0, 0.5: 0.05, 0.9: 0.01, 0.99: 0.001, 1: 0},
	}))
	return &Controller{client: deps.Client, startup: startup, observed: map[types.NamespacedName]types.UID{}}
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

// Reconcile observes the pod's startup duration the first time it is running and ready, and forgets pods
// that are gone.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.client.Get(ctx, req.NamespacedName, pod); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.mu.Lock()
			delete(c.observed, req.NamespacedName)
			c.mu.Unlock()
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ready, ok := readySince(pod)
	if !ok || !c.firstTime(req.NamespacedName, pod.UID) {
		return reconcile.Result{}, nil
	}
	c.startup.Observe(ready.Sub(pod.CreationTimestamp.Time).Seconds())
	return reconcile.Result{}, nil
}

// firstTime reports whether this pod (by UID) is seen ready for the first time under its name, and
// remembers it.
func (c *Controller) firstTime(name types.NamespacedName, uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.observed[name] == uid {
		return false
	}
	c.observed[name] = uid
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
