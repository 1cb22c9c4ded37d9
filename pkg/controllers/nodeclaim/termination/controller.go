package termination

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	controllerruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
)

// Requeue intervals for the waits that nothing watched announces.
const (
	// nodePollInterval is how often a claim waiting for its Nodes to go is looked at again; Node deletions
	// also wake it through the watch.
	nodePollInterval = 5 * time.Second
)

// Deps are the controller's dependencies, and the Node termination controller's.
type Deps struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// CloudProvider terminates the instances.
	CloudProvider cloudprovider.CloudProvider
	// Clock times the terminations.
	Clock clock.Clock
	// Recorder publishes the termination events.
	Recorder events.Recorder
	// Registerer is where the controller's metrics are registered.
	Registerer prometheus.Registerer
}

// Controller finalizes deleted NodeClaims. Build it with NewController.
type Controller struct {
	kube      client.Client
	instances Instances
	clock     clock.Clock
	recorder  events.Recorder
	metrics   *collectors
}

// NewController returns the NodeClaim termination controller.
func NewController(deps Deps) *Controller {
	return &Controller{
		kube:      deps.Client,
		instances: Instances{Kube: deps.Client, Cloud: deps.CloudProvider, Clock: deps.Clock},
		clock:     deps.Clock,
		recorder:  deps.Recorder,
		metrics:   newCollectors(deps.Registerer),
	}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodeclaim.termination" }

// Register watches NodeClaims that carry the termination finalizer, and Nodes, whose deletion lets their
// NodeClaim's termination go on.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	if err := fieldindex.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	err := controllerruntime.NewControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(HasTerminationFinalizer))).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.nodeClaimsOfNode), builder.WithPredicates(nodeGoing())).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
	if err != nil {
		return fmt.Errorf("building %s controller, %w", c.Name(), err)
	}
	return nil
}

// Reconcile moves one deleted NodeClaim through the termination steps (see the package documentation).
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nodeClaim := &v1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, nodeClaim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nodeClaim.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(nodeClaim, v1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodeClaim", klog.KObj(nodeClaim)))
	result, err := c.finalize(ctx, nodeClaim)
	if apierrors.IsConflict(err) {
		// Another writer got there first: look again at the new version soon, without logging an error.
		return reconcile.Result{RequeueAfter: fieldpatch.ConflictRetryInterval}, nil
	}
	return result, err
}

// finalize runs the termination steps in order and stops at the first that has to wait.
func (c *Controller) finalize(ctx context.Context, nodeClaim *v1.NodeClaim) (reconcile.Result, error) {
	// 1.
	if _, err := Deadline(ctx, c.kube, nodeClaim); err != nil {
		return reconcile.Result{}, err
	}
	// 2. The Node termination controller drains each Node and terminates the instance; wait for it.
	nodes, err := c.nodesOfNodeClaim(ctx, nodeClaim)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(nodes) > 0 {
		return reconcile.Result{RequeueAfter: nodePollInterval}, c.deleteNodes(ctx, nodes)
	}
	// 3.
	if wait, err := c.terminateInstance(ctx, nodeClaim); err != nil || wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, err
	}
	// 4.
	return reconcile.Result{}, c.removeFinalizer(ctx, nodeClaim)
}

// nodesOfNodeClaim returns the Nodes of the claim's instance.
func (c *Controller) nodesOfNodeClaim(ctx context.Context, nodeClaim *v1.NodeClaim) ([]*corev1.Node, error) {
	return fieldindex.NodesForNodeClaim(ctx, c.kube, nodeClaim)
}

// deleteNodes deletes the Nodes whose deletion hasn't begun.
func (c *Controller) deleteNodes(ctx context.Context, nodes []*corev1.Node) error {
	for _, node := range nodes {
		if !node.DeletionTimestamp.IsZero() {
			continue
		}
		if err := c.kube.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting node, %w", err)
		}
		log.FromContext(ctx).Info("deleting node of deleted nodeclaim", "Node", klog.KObj(node))
	}
	return nil
}

// terminateInstance terminates the claim's instance (see Instances.Terminate) and returns how long to wait
// before asking again, zero once it is gone.
func (c *Controller) terminateInstance(ctx context.Context, nodeClaim *v1.NodeClaim) (time.Duration, error) {
	gone, err := c.instances.Terminate(ctx, nodeClaim, func(err error) { c.recorder.Publish(failedTerminationEvent(nodeClaim, err)) })
	if err != nil || gone {
		return 0, err
	}
	return InstancePollInterval, nil
}

// removeFinalizer releases the NodeClaim and records its termination.
func (c *Controller) removeFinalizer(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	stored := nodeClaim.DeepCopy()
	if !controllerutil.RemoveFinalizer(nodeClaim, v1.TerminationFinalizer) {
		return nil
	}
	if err := fieldpatch.Patch(ctx, c.kube, nodeClaim, stored, fieldpatch.Whole("metadata", "finalizers")); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing termination finalizer from nodeclaim, %w", err))
	}
	c.metrics.observe(nodeClaim, c.clock.Now())
	log.FromContext(ctx).Info("deleted nodeclaim")
	return nil
}

// nodeClaimsOfNode maps a Node to the deleted NodeClaims it belongs to, so that a Node's deletion wakes its
// claim.
func (c *Controller) nodeClaimsOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	node, ok := o.(*corev1.Node)
	if !ok {
		return nil
	}
	claims, err := fieldindex.NodeClaimsForNode(ctx, c.kube, node)
	if err != nil {
		log.FromContext(ctx).Error(err, "listing nodeclaims of node", "Node", klog.KObj(node))
		return nil
	}
	var requests []reconcile.Request
	for _, nc := range claims {
		if !nc.DeletionTimestamp.IsZero() {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)})
		}
	}
	return requests
}

// nodeGoing selects the Node events that can let a NodeClaim's termination go on: the Node's deletion
// beginning and ending.
func nodeGoing() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(e event.UpdateEvent) bool { return !e.ObjectNew.GetDeletionTimestamp().IsZero() },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// HasTerminationFinalizer selects the NodeClaims (and Nodes, for the Node termination controller) that may
// have to be finalized.
func HasTerminationFinalizer(o client.Object) bool {
	return controllerutil.ContainsFinalizer(o, v1.TerminationFinalizer)
}
