package hash

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Deps are what the hash controller needs.
type Deps struct {
	// Client reads NodePools (the manager's cached client) and patches their annotations.
	Client client.Client
}

// Controller keeps the nodepool-hash annotations current.
type Controller struct {
	client client.Client
}

// NewController returns the NodePool hash controller.
func NewController(deps Deps) *Controller {
	return &Controller{client: deps.Client}
}

// Name returns the controller's name.
func (c *Controller) Name() string { return "nodepool.hash" }

// Register watches NodePool spec and annotation changes.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodePool{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Complete(reconcile.AsReconciler(c.client, c))
}

// Reconcile writes the pool's template hash and hash version when either is missing or stale. When the pool
// was hashed under another scheme, its NodeClaims are first moved onto the current one.
func (c *Controller) Reconcile(ctx context.Context, np *v1.NodePool) (reconcile.Result, error) {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodePool", klog.KObj(np)))
	if !np.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	sum := np.Hash()
	if np.Annotations[v1.NodePoolHashAnnotationKey] == sum && np.Annotations[v1.NodePoolHashVersionAnnotationKey] == v1.NodePoolHashVersion {
		return reconcile.Result{}, nil
	}
	if np.Annotations[v1.NodePoolHashVersionAnnotationKey] != v1.NodePoolHashVersion {
		if err := c.restampNodeClaims(ctx, np); err != nil {
			return reconcile.Result{}, err
		}
	}
	stored := np.DeepCopy()
	if np.Annotations == nil {
		np.Annotations = map[string]string{}
	}
	np.Annotations[v1.NodePoolHashAnnotationKey] = sum
	np.Annotations[v1.NodePoolHashVersionAnnotationKey] = v1.NodePoolHashVersion
	// Annotations merge key by key, so a concurrent writer of other annotations is not overwritten.
	if err := c.client.Patch(ctx, np, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool hash, %w", err))
	}
	log.FromContext(ctx).V(1).Info("annotated nodepool hash", "hash", sum)
	return reconcile.Result{}, nil
}
