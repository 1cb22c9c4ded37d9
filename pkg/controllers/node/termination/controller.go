package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	controllerruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex"
	nodeclaimtermination "github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/termination"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
)

// PodNodeNameField is the field index on Pods by spec.nodeName that Register adds to the manager's cache
// (see pkg/controllers/fieldindex).
const PodNodeNameField = fieldindex.PodNodeName

// volumePollInterval is how often a node waiting for its VolumeAttachments to go is looked at again.
const volumePollInterval = 2 * time.Second

// Deps are the controller's dependencies; the NodeClaim termination controller takes the same.
type Deps = nodeclaimtermination.Deps

// Controller drains and finalizes deleted Nodes. Build it with NewController.
type Controller struct {
	kube      client.Client
	cloud     cloudprovider.CloudProvider
	instances nodeclaimtermination.Instances
	clock     clock.Clock
	recorder  events.Recorder
	metrics   *collectors
	backoff   *drainBackoff
}

// NewController returns the Node termination controller.
func NewController(deps Deps) *Controller {
	return &Controller{
		kube:      deps.Client,
		cloud:     deps.CloudProvider,
		instances: nodeclaimtermination.Instances{Kube: deps.Client, Cloud: deps.CloudProvider, Clock: deps.Clock},
		clock:     deps.Clock,
		recorder:  deps.Recorder,
		metrics:   newCollectors(deps.Registerer),
		backoff:   newDrainBackoff(),
	}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "node.termination" }

// Register indexes Pods by node name and watches Nodes that carry the termination finalizer, and the
// NodeClaims of those Nodes.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	if err := fieldindex.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	err := controllerruntime.NewControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Node{}, builder.WithPredicates(predicate.NewPredicateFuncs(nodeclaimtermination.HasTerminationFinalizer))).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(nodeOfNodeClaim)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
	if err != nil {
		return fmt.Errorf("building %s controller, %w", c.Name(), err)
	}
	return nil
}

// Reconcile moves one deleted Node through the termination steps (see the package documentation).
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(node, v1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	nodeClaim, err := c.nodeClaimForNode(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if nodeClaim == nil && node.Labels[v1.NodePoolLabelKey] == "" {
		return reconcile.Result{}, nil // not a node Lathe manages
	}
	logger := log.FromContext(ctx).WithValues("Node", klog.KObj(node))
	if nodeClaim != nil {
		logger = logger.WithValues("NodeClaim", klog.KObj(nodeClaim))
	}
	ctx = log.IntoContext(ctx, logger)
	result, err := c.finalize(ctx, node, nodeClaim)
	if apierrors.IsConflict(err) {
		// Another writer got there first: look again at the new version soon, without logging an error.
		return reconcile.Result{RequeueAfter: fieldpatch.ConflictRetryInterval}, nil
	}
	return result, err
}

// finalize runs the termination steps in order and stops at the first that has to wait.
func (c *Controller) finalize(ctx context.Context, node *corev1.Node, nodeClaim *v1.NodeClaim) (reconcile.Result, error) {
	// 1. The NodeClaim never outlives its Node.
	nodeClaim, err := c.deleteNodeClaim(ctx, nodeClaim)
	if err != nil {
		return reconcile.Result{}, err
	}
	// 2. and 3. Record the deadline and keep new pods off the node.
	deadline, err := nodeclaimtermination.Deadline(ctx, c.kube, nodeClaim)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := c.taint(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	// 4. A node whose instance is already gone can't run pods any more: there is nothing to drain.
	gone, err := c.instanceGone(ctx, node, nodeClaim)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !gone {
		// 5. to 7. Each step returns how long to wait before looking again, or zero once it is done.
		for _, step := range []func(context.Context, *corev1.Node, *v1.NodeClaim, *time.Time) (time.Duration, error){
			c.drain, c.awaitVolumeDetachment, c.terminateInstance,
		} {
			if wait, err := step(ctx, node, nodeClaim, deadline); err != nil || wait > 0 {
				return reconcile.Result{RequeueAfter: wait}, err
			}
		}
	}
	// 8.
	return reconcile.Result{}, c.removeFinalizer(ctx, node)
}

// removeFinalizer releases the Node and records its termination.
func (c *Controller) removeFinalizer(ctx context.Context, node *corev1.Node) error {
	stored := node.DeepCopy()
	if !controllerutil.RemoveFinalizer(node, v1.TerminationFinalizer) {
		return nil
	}
	if err := fieldpatch.Patch(ctx, c.kube, node, stored, fieldpatch.Whole("metadata", "finalizers")); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing termination finalizer from node, %w", err))
	}
	c.backoff.forget(node.UID)
	c.metrics.terminated(node, c.clock.Now())
	log.FromContext(ctx).Info("deleted node")
	return nil
}

// nodeOfNodeClaim maps a NodeClaim to its Node, so that status changes of the claim wake the Node up.
func nodeOfNodeClaim(_ context.Context, o client.Object) []reconcile.Request {
	nodeClaim, ok := o.(*v1.NodeClaim)
	if !ok || nodeClaim.Status.NodeName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: nodeClaim.Status.NodeName}}}
}
