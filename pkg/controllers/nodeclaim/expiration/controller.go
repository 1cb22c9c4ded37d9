package expiration

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	controllerruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// Deps are the controller's dependencies.
type Deps struct {
	// Client reads NodeClaims from the manager's cache and deletes them.
	Client client.Client
	// Clock tells the time the claims' ages are measured at.
	Clock clock.Clock
	// Recorder publishes the disruption events.
	Recorder events.Recorder
	// Registerer is where the controller's metrics are registered.
	Registerer prometheus.Registerer
}

// Controller deletes expired NodeClaims. Build it with NewController.
type Controller struct {
	kube      client.Client
	clock     clock.Clock
	recorder  events.Recorder
	disrupted *prometheus.CounterVec
}

// NewController returns the expiration controller.
func NewController(deps Deps) *Controller {
	return &Controller{
		kube:      deps.Client,
		clock:     deps.Clock,
		recorder:  deps.Recorder,
		disrupted: metrics.NodeClaimsDisrupted(deps.Registerer),
	}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodeclaim.expiration" }

// Register watches NodeClaims that may expire.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	err := controllerruntime.NewControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			nodeClaim, ok := o.(*v1.NodeClaim)
			return ok && !nodeClaim.Spec.ExpireAfter.IsNever()
		}))).
		Complete(c)
	if err != nil {
		return fmt.Errorf("building %s controller, %w", c.Name(), err)
	}
	return nil
}

// Reconcile deletes the NodeClaim once it is older than its expireAfter, and until then asks to be called
// again exactly when it expires.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nodeClaim := &v1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, nodeClaim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nodeClaim.DeletionTimestamp.IsZero() || nodeClaim.Spec.ExpireAfter.IsNever() {
		return reconcile.Result{}, nil
	}
	// Measured on the injected clock rather than with time.Until, so that tests can step it.
	expiresAt := nodeClaim.CreationTimestamp.Add(*nodeClaim.Spec.ExpireAfter.Duration)
	if left := expiresAt.Sub(c.clock.Now()); left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodeClaim", klog.KObj(nodeClaim)))
	// The delete is conditional on the UID read: a claim replaced under the same name is not expired.
	if err := c.kube.Delete(ctx, nodeClaim, client.Preconditions{UID: &nodeClaim.UID}); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("deleting expired nodeclaim, %w", err))
	}
	log.FromContext(ctx).Info("deleted expired nodeclaim", "expireAfter", nodeClaim.Spec.ExpireAfter.String())
	c.disrupted.WithLabelValues(metrics.ReasonExpired, nodeClaim.Labels[v1.NodePoolLabelKey], nodeClaim.Labels[v1.CapacityTypeLabelKey]).Inc()
	c.recorder.Publish(expiredEvent(nodeClaim))
	return reconcile.Result{}, nil
}
