package readiness

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
)

// Deps are what the readiness controller needs.
type Deps struct {
	// Client reads NodePools and EC2NodeClasses (the manager's cached client) and patches NodePool status.
	Client client.Client
	// Clock stamps condition transitions.
	Clock clock.Clock
}

// Controller sets NodePool ValidationSucceeded, NodeClassReady and Ready.
type Controller struct {
	client client.Client
	clock  clock.Clock
}

// NewController returns the NodePool readiness controller.
func NewController(deps Deps) *Controller {
	return &Controller{client: deps.Client, clock: deps.Clock}
}

// Name returns the controller's name.
func (c *Controller) Name() string { return "nodepool.readiness" }

// Register watches NodePool spec changes and every change to the EC2NodeClasses pools refer to.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodePool{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&awsv1.EC2NodeClass{}, handler.EnqueueRequestsFromMapFunc(c.poolsReferring)).
		Complete(reconcile.AsReconciler(c.client, c))
}

// Reconcile recomputes the pool's readiness conditions and patches its status when they changed.
func (c *Controller) Reconcile(ctx context.Context, np *v1.NodePool) (reconcile.Result, error) {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodePool", klog.KObj(np)))
	if !np.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	stored := np.DeepCopy()
	s := conditionSetter{np: np, now: c.clock.Now()}
	s.setValidation()
	if err := s.setNodeClassReady(ctx, c.client); err != nil {
		return reconcile.Result{}, err
	}
	s.setReady()
	if equality.Semantic.DeepEqual(stored.Status, np.Status) {
		return reconcile.Result{}, nil
	}
	// Conditions are a list other controllers write too: the optimistic lock makes a concurrent write
	// fail this patch (and retry) instead of being overwritten.
	patch := client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})
	if err := c.client.Status().Patch(ctx, np, patch); err != nil {
		if apierrors.IsConflict(err) {
			// Another writer got there first (at startup the counter usually does): look again soon, quietly.
			return reconcile.Result{RequeueAfter: fieldpatch.ConflictRetryInterval}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool status, %w", err))
	}
	log.FromContext(ctx).V(1).Info("updated nodepool readiness")
	return reconcile.Result{}, nil
}

// poolsReferring maps an EC2NodeClass to the NodePools that refer to it.
func (c *Controller) poolsReferring(ctx context.Context, obj client.Object) []reconcile.Request {
	pools := &v1.NodePoolList{}
	if err := c.client.List(ctx, pools); err != nil {
		log.FromContext(ctx).Error(err, "listing nodepools for ec2nodeclass", "EC2NodeClass", klog.KObj(obj))
		return nil
	}
	var out []reconcile.Request
	for i := range pools.Items {
		ref := pools.Items[i].Spec.Template.Spec.NodeClassRef
		if ref != nil && ref.Group == awsv1.Group && ref.Kind == nodeClassKind && ref.Name == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: pools.Items[i].Name}})
		}
	}
	return out
}
