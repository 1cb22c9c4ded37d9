package interruption

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
	"github.com/lathe-autoscaler/lathe/pkg/operator/poll"
)

// DefaultHealthInterval is how often the provider is asked for unhealthy instances (Karpenter's AWS
// provider calls DescribeInstanceStatus every minute).
const DefaultHealthInterval = time.Minute

// HealthDeps are the health controller's dependencies.
type HealthDeps struct {
	// Client reads NodeClaims and Nodes from the manager's cache, and annotates and deletes NodeClaims.
	Client client.Client
	// Source reports the provider's unhealthy instances.
	Source cloudprovider.InstanceHealthSource
	// Clock dates the termination timestamp of instances failing a status check.
	Clock clock.Clock
	// Recorder publishes the interruption events.
	Recorder events.Recorder
	// Registerer is where the controller's metrics are registered.
	Registerer prometheus.Registerer
	// Interval between polls; DefaultHealthInterval when zero.
	Interval time.Duration
	// DryRun only counts unhealthy instances, leaving their NodeClaims alone.
	DryRun bool
}

// HealthController replaces the cluster's instances the provider finds failing a health check or with
// maintenance scheduled, as the interruption controller does for queued interruptions. Build it with
// NewHealthController.
type HealthController struct {
	handler
	source    cloudprovider.InstanceHealthSource
	interval  time.Duration
	dryRun    bool
	unhealthy *prometheus.CounterVec

	mu sync.Mutex
	// counted are the instance+category pairs already counted and still unhealthy at the last poll.
	counted map[unhealthyKey]bool
}

type unhealthyKey struct{ providerID, category string }

// NewHealthController returns the instance health controller.
func NewHealthController(deps HealthDeps) *HealthController {
	if deps.Interval == 0 {
		deps.Interval = DefaultHealthInterval
	}
	return &HealthController{
		handler:   handler{kube: deps.Client, clock: deps.Clock, recorder: deps.Recorder, disrupted: metrics.NodeClaimsDisrupted(deps.Registerer)},
		source:    deps.Source,
		interval:  deps.Interval,
		dryRun:    deps.DryRun,
		unhealthy: newUnhealthyCounter(deps.Registerer),
		counted:   map[unhealthyKey]bool{},
	}
}

// Name is the controller's name in logs and metrics.
func (c *HealthController) Name() string { return "interruption.instancestatus" }

// Register polls once at start and then every interval.
func (c *HealthController) Register(_ context.Context, mgr manager.Manager) error {
	return poll.Register(mgr, c.Name(), c)
}

// Reconcile asks the provider for its unhealthy instances and handles those the cluster has a NodeClaim
// for, Parallelism at a time. Credentials that don't allow the check are logged, and the poll goes on.
func (c *HealthController) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	found, err := c.source.UnhealthyInstances(ctx)
	if errors.Is(err, cloudprovider.ErrNotPermitted) {
		log.FromContext(ctx).Error(err, "instance health checks are off until the controller's credentials allow them")
		return reconcile.Result{RequeueAfter: c.interval}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("listing unhealthy instances, %w", err)
	}
	current := map[unhealthyKey]bool{}
	errs := make([]error, len(found))
	workqueue.ParallelizeUntil(ctx, Parallelism, len(found), func(i int) {
		errs[i] = c.handle(ctx, found[i], current)
	})
	c.mu.Lock()
	for key := range c.counted {
		if !current[key] {
			delete(c.counted, key)
		}
	}
	c.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: c.interval}, nil
}

// handle replaces one unhealthy instance of the cluster (unless dry-run) and counts it the first time
// its category is seen failing.
func (c *HealthController) handle(ctx context.Context, u cloudprovider.UnhealthyInstance, current map[unhealthyKey]bool) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("messageKind", string(u.Kind), "providerID", u.ProviderID))
	nodeClaim, node, err := c.instance(ctx, u.ProviderID)
	if err != nil || nodeClaim == nil {
		return err
	}
	if !c.dryRun {
		if err := c.interrupt(ctx, u.Kind, nodeClaim, node); err != nil {
			return fmt.Errorf("handling unhealthy instance, %w", err)
		}
	}
	key := unhealthyKey{u.ProviderID, u.Category}
	c.mu.Lock()
	current[key] = true
	first := !c.counted[key]
	c.counted[key] = true
	c.mu.Unlock()
	if first {
		log.FromContext(ctx).Info("found unhealthy instance of the cluster", "category", u.Category, "since", u.Since)
		c.unhealthy.WithLabelValues(u.Category).Inc()
	}
	return nil
}

// categoryLabel labels the unhealthy count with the failing check.
const categoryLabel = "category"

func newUnhealthyCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	return metrics.NewCounter(reg, prometheus.CounterOpts{
		Namespace: metrics.Namespace,
		Subsystem: "interruption",
		Name:      "instance_status_unhealthy_total",
		Help:      "Distinct instance and status check pairs found failing, each counted once while it keeps failing, by check category.",
	}, categoryLabel)
}
