package drift

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	controllerruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
)

// recheckInterval is how often a claim is checked again without any change to it or its pool: the cloud
// provider's side of drift (images, security groups, ...) changes without an event here.
const recheckInterval = 5 * time.Minute

// Deps are the controller's dependencies.
type Deps struct {
	// Client reads NodeClaims and NodePools from the manager's cache and patches NodeClaim status.
	Client client.Client
	// CloudProvider tells whether an instance drifted from its node class.
	CloudProvider cloudprovider.CloudProvider
	// Clock stamps the condition's transition time.
	Clock clock.Clock
}

// Controller keeps the NodeClaims' Drifted condition. Build it with NewController.
type Controller struct {
	kube  client.Client
	cloud cloudprovider.CloudProvider
	clock clock.Clock
}

// NewController returns the drift controller.
func NewController(deps Deps) *Controller {
	return &Controller{kube: deps.Client, cloud: deps.CloudProvider, clock: deps.Clock}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodeclaim.drift" }

// Register watches NodeClaims, and NodePools, whose changes may drift all their claims.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	err := controllerruntime.NewControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodeClaim{}).
		Watches(&v1.NodePool{}, handler.EnqueueRequestsFromMapFunc(c.nodeClaimsOfPool)).
		Complete(c)
	if err != nil {
		return fmt.Errorf("building %s controller, %w", c.Name(), err)
	}
	return nil
}

// Reconcile sets or clears the NodeClaim's Drifted condition.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nodeClaim := &v1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, nodeClaim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nodeClaim.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	nodePool, err := c.nodePoolOf(ctx, nodeClaim)
	if err != nil || nodePool == nil {
		return reconcile.Result{}, err
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodeClaim", klog.KObj(nodeClaim), "NodePool", klog.KObj(nodePool)))
	if !isLaunched(nodeClaim) {
		// Only a launched claim has something to drift; an earlier mark is stale.
		return afterWrite(reconcile.Result{}, c.setDrifted(ctx, nodeClaim, ""))
	}
	reason, err := c.driftReason(ctx, nodePool, nodeClaim)
	if cloudprovider.IsNodeClaimNotFoundError(err) {
		// The instance is gone; garbage collection deals with the claim.
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("finding drift, %w", err)
	}
	return afterWrite(reconcile.Result{RequeueAfter: recheckInterval}, c.setDrifted(ctx, nodeClaim, reason))
}

// afterWrite is the result of a reconcile that wrote the condition: a write that lost to another writer's
// looks again soon, without an error.
func afterWrite(result reconcile.Result, err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: fieldpatch.ConflictRetryInterval}, nil
	}
	return result, err
}

// nodePoolOf returns the claim's NodePool, or nil for a claim of no pool or of one that is gone.
func (c *Controller) nodePoolOf(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodePool, error) {
	name, ok := nodeClaim.Labels[v1.NodePoolLabelKey]
	if !ok {
		return nil, nil
	}
	nodePool := &v1.NodePool{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, nodePool); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting nodepool, %w", err)
	}
	return nodePool, nil
}

// setDrifted makes the Drifted condition True with the reason, or removes it for "".
func (c *Controller) setDrifted(ctx context.Context, nodeClaim *v1.NodeClaim, reason cloudprovider.DriftReason) error {
	stored := nodeClaim.DeepCopy()
	var changed bool
	if reason == "" {
		changed = meta.RemoveStatusCondition(&nodeClaim.Status.Conditions, v1.ConditionTypeDrifted)
	} else {
		changed = meta.SetStatusCondition(&nodeClaim.Status.Conditions, metav1.Condition{
			Type:               v1.ConditionTypeDrifted,
			Status:             metav1.ConditionTrue,
			Reason:             string(reason),
			Message:            string(reason),
			ObservedGeneration: nodeClaim.Generation,
			LastTransitionTime: metav1.NewTime(c.clock.Now()),
		})
	}
	if !changed {
		return nil
	}
	// Guarded by the conditions it replaces and the labels and annotations the reason was found from (the
	// pool's hash, its requirements), not by the whole object.
	if err := fieldpatch.PatchStatus(ctx, c.kube, nodeClaim, stored, fieldpatch.Whole("status", "conditions"),
		fieldpatch.Read("metadata", "labels"), fieldpatch.Read("metadata", "annotations")); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching nodeclaim condition %s, %w", v1.ConditionTypeDrifted, err))
	}
	if reason == "" {
		log.FromContext(ctx).V(1).Info("removed drifted condition")
	} else {
		log.FromContext(ctx).V(1).Info("marked drifted", "reason", string(reason))
	}
	return nil
}

// nodeClaimsOfPool maps a NodePool to its NodeClaims.
func (c *Controller) nodeClaimsOfPool(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1.NodeClaimList{}
	if err := c.kube.List(ctx, list, client.MatchingLabels{v1.NodePoolLabelKey: o.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing nodeclaims of nodepool", "NodePool", klog.KObj(o))
		return nil
	}
	requests := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return requests
}

func isLaunched(nodeClaim *v1.NodeClaim) bool {
	return meta.IsStatusConditionTrue(nodeClaim.Status.Conditions, v1.ConditionTypeLaunched)
}
