package termination

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
)

// Requeue intervals for the waits that nothing watched announces.
const (
	// nodePollInterval is how often a claim waiting for its Nodes to go is looked at again; Node deletions
	// also wake it through the watch.
	nodePollInterval = 5 * time.Second
	// instancePollInterval is how often CloudProvider.Delete is called again while the instance terminates.
	instancePollInterval = 5 * time.Second
	// conflictRetryInterval is how soon a pass that lost an optimistic-lock race runs again.
	conflictRetryInterval = 100 * time.Millisecond
)

// reasonInstanceTerminating is the reason of the InstanceTerminating condition.
const reasonInstanceTerminating = "InstanceTerminating"

// Deps are the controller's dependencies.
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
	kube     client.Client
	cloud    cloudprovider.CloudProvider
	clock    clock.Clock
	recorder events.Recorder
	metrics  *collectors
}

// NewController returns the NodeClaim termination controller.
func NewController(deps Deps) *Controller {
	return &Controller{
		kube:     deps.Client,
		cloud:    deps.CloudProvider,
		clock:    deps.Clock,
		recorder: deps.Recorder,
		metrics:  newCollectors(deps.Registerer),
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
		For(&v1.NodeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(hasTerminationFinalizer))).
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
		return reconcile.Result{RequeueAfter: conflictRetryInterval}, nil
	}
	return result, err
}

// finalize runs the termination steps in order and stops at the first that has to wait.
func (c *Controller) finalize(ctx context.Context, nodeClaim *v1.NodeClaim) (reconcile.Result, error) {
	// 1.
	if err := c.annotateTerminationTimestamp(ctx, nodeClaim); err != nil {
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

// annotateTerminationTimestamp records when the claim's grace period runs out, once.
func (c *Controller) annotateTerminationTimestamp(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	if nodeClaim.Spec.TerminationGracePeriod == nil {
		return nil
	}
	if _, ok := nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		return nil
	}
	deadline := nodeClaim.DeletionTimestamp.Add(nodeClaim.Spec.TerminationGracePeriod.Duration)
	stored := nodeClaim.DeepCopy()
	if nodeClaim.Annotations == nil {
		nodeClaim.Annotations = map[string]string{}
	}
	nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey] = deadline.Format(time.RFC3339)
	if err := c.kube.Patch(ctx, nodeClaim, client.MergeFrom(stored)); err != nil {
		return fmt.Errorf("annotating nodeclaim with its termination timestamp, %w", err)
	}
	return nil
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

// terminateInstance calls CloudProvider.Delete until it reports the instance gone and returns how long to
// wait before calling again, zero once it is gone. A claim without a provider ID is asked about too: its
// launch may have happened without being recorded (a restart loses the launch cache), and the provider
// finds an instance by the claim it was launched for.
func (c *Controller) terminateInstance(ctx context.Context, nodeClaim *v1.NodeClaim) (time.Duration, error) {
	err := c.cloud.Delete(ctx, nodeClaim)
	if cloudprovider.IsNodeClaimNotFoundError(err) {
		return 0, nil
	}
	if err != nil {
		c.recorder.Publish(failedTerminationEvent(nodeClaim, err))
		return 0, fmt.Errorf("terminating instance, %w", err)
	}
	stored := nodeClaim.DeepCopy()
	if meta.SetStatusCondition(&nodeClaim.Status.Conditions, metav1.Condition{
		Type:               v1.ConditionTypeInstanceTerminating,
		Status:             metav1.ConditionTrue,
		Reason:             reasonInstanceTerminating,
		ObservedGeneration: nodeClaim.Generation,
		LastTransitionTime: metav1.NewTime(c.clock.Now()),
	}) {
		if err := c.kube.Status().Patch(ctx, nodeClaim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return 0, client.IgnoreNotFound(fmt.Errorf("setting nodeclaim condition %s, %w", v1.ConditionTypeInstanceTerminating, err))
		}
		log.FromContext(ctx).Info("terminating instance", "providerID", nodeClaim.Status.ProviderID)
	}
	return instancePollInterval, nil
}

// removeFinalizer releases the NodeClaim and records its termination.
func (c *Controller) removeFinalizer(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	stored := nodeClaim.DeepCopy()
	if !controllerutil.RemoveFinalizer(nodeClaim, v1.TerminationFinalizer) {
		return nil
	}
	if err := c.kube.Patch(ctx, nodeClaim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
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

// hasTerminationFinalizer selects the NodeClaims this controller may have to finalize.
func hasTerminationFinalizer(o client.Object) bool {
	return controllerutil.ContainsFinalizer(o, v1.TerminationFinalizer)
}
