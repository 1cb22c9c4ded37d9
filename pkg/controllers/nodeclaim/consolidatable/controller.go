package consolidatable

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
)

// Deps are what the controller needs.
type Deps struct {
	// Client reads NodeClaims and NodePools from the manager's cache and patches NodeClaim status.
	Client client.Client
	Clock  clock.Clock
}

// Controller keeps NodeClaims' Consolidatable condition.
type Controller struct {
	client client.Client
	clock  clock.Clock
}

// NewController returns the Consolidatable condition controller.
func NewController(deps Deps) *Controller {
	return &Controller{client: deps.Client, clock: deps.Clock}
}

// Name returns the controller's name.
func (c *Controller) Name() string { return "nodeclaim.consolidatable" }

// Register watches NodeClaims, and NodePools (a changed consolidateAfter re-evaluates the pool's claims).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodeClaim{}).
		Watches(&v1.NodePool{}, handler.EnqueueRequestsFromMapFunc(c.claimsOfPool)).
		Complete(reconcile.AsReconciler(c.client, c))
}

// Reconcile sets the claim's Consolidatable condition and requeues for when it turns True.
func (c *Controller) Reconcile(ctx context.Context, claim *v1.NodeClaim) (reconcile.Result, error) {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodeClaim", klog.KObj(claim)))
	if !claim.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	pool := &v1.NodePool{}
	if err := c.client.Get(ctx, types.NamespacedName{Name: claim.Labels[v1.NodePoolLabelKey]}, pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("getting nodepool, %w", err))
	}
	now := c.clock.Now()
	desired := Compute(pool, claim, now)
	stored := claim.DeepCopy()
	if !Apply(claim, desired, now) {
		return reconcile.Result{RequeueAfter: desired.RequeueAfter}, nil
	}
	// Guarded by the conditions it replaces and the pod event time it was computed from, not by the whole
	// object: the claim's other writers (labels, the lifecycle's status fields) don't make it fail.
	if err := fieldpatch.PatchStatus(ctx, c.client, claim, stored,
		fieldpatch.Whole("status", "conditions"), fieldpatch.Read("status", "lastPodEventTime")); err != nil {
		if apierrors.IsConflict(err) {
			// Its conditions or last pod event changed since the cached copy: look again soon, quietly.
			return reconcile.Result{RequeueAfter: fieldpatch.ConflictRetryInterval}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching consolidatable condition, %w", err))
	}
	return reconcile.Result{RequeueAfter: desired.RequeueAfter}, nil
}

// claimsOfPool enqueues the NodeClaims of the pool.
func (c *Controller) claimsOfPool(ctx context.Context, o client.Object) []reconcile.Request {
	var claims v1.NodeClaimList
	if err := c.client.List(ctx, &claims, client.MatchingLabels{v1.NodePoolLabelKey: o.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing nodeclaims of nodepool")
		return nil
	}
	out := make([]reconcile.Request, 0, len(claims.Items))
	for i := range claims.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: claims.Items[i].Name}})
	}
	return out
}
