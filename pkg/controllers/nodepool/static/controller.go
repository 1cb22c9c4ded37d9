package static

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// Deps are what the static controller needs.
type Deps struct {
	// Client reads NodePools and NodeClaims (the manager's cached client), creates and deletes NodeClaims.
	Client        client.Client
	Cluster       *state.Cluster
	CloudProvider cloudprovider.CloudProvider
	Clock         clock.Clock
}

// Controller keeps static NodePools at their replica count.
type Controller struct{ deps Deps }

// NewController returns the static NodePool controller.
func NewController(deps Deps) *Controller { return &Controller{deps: deps} }

// Name returns the controller's name.
func (c *Controller) Name() string { return "nodepool.static" }

// resync is how often a static pool is checked without any event (a missed event can't leave it short).
const resync = time.Minute

// Register watches static NodePools and the NodeClaims of any pool (mapped to their pool by label).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	static := predicate.NewPredicateFuncs(func(o client.Object) bool {
		pool, ok := o.(*v1.NodePool)
		return ok && pool.Spec.Replicas != nil
	})
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodePool{}, builder.WithPredicates(static)).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if pool := o.GetLabels()[v1.NodePoolLabelKey]; pool != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
			}
			return nil
		})).
		Complete(reconcile.AsReconciler(c.deps.Client, c))
}

// Reconcile launches or removes NodeClaims so that the pool has spec.replicas of them.
func (c *Controller) Reconcile(ctx context.Context, pool *v1.NodePool) (reconcile.Result, error) {
	if pool.Spec.Replicas == nil || pool.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodePool", klog.KObj(pool)))
	// Counting before cluster state has seen every claim would launch again what exists.
	if !c.deps.Cluster.Synced(ctx) {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	var claims v1.NodeClaimList
	if err := c.deps.Client.List(ctx, &claims, client.MatchingLabels{v1.NodePoolLabelKey: pool.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims of nodepool %s, %w", pool.Name, err)
	}
	n := countClaims(claims.Items)
	if launch := toLaunch(pool, n); launch > 0 {
		if meta.IsStatusConditionFalse(pool.Status.Conditions, v1.ConditionTypeReady) {
			return reconcile.Result{RequeueAfter: resync}, nil
		}
		return reconcile.Result{RequeueAfter: resync}, c.launch(ctx, pool, launch)
	}
	if remove := toRemove(pool, n, c.podsOf()); len(remove) > 0 {
		return reconcile.Result{RequeueAfter: resync}, c.remove(ctx, pool, remove)
	}
	return reconcile.Result{RequeueAfter: resync}, nil
}

// launch creates count NodeClaims from the pool's template and waits until the cache has them, so the next
// reconcile counts them.
func (c *Controller) launch(ctx context.Context, pool *v1.NodePool, count int) error {
	its, err := c.deps.CloudProvider.GetInstanceTypes(ctx, pool)
	if err != nil {
		return fmt.Errorf("getting instance types of nodepool %s, %w", pool.Name, err)
	}
	plan, err := provisioning.StaticNodeClaimPlan(pool, its)
	if err != nil {
		return err
	}
	log.FromContext(ctx).Info("provisioning nodeclaims to satisfy replica count", "desired", *pool.Spec.Replicas, "count", count)
	for range count {
		claim, err := provisioning.NewNodeClaim(pool, plan)
		if err != nil {
			return err
		}
		if err := c.deps.Client.Create(ctx, claim); err != nil {
			return fmt.Errorf("creating nodeclaim for static nodepool %s, %w", pool.Name, err)
		}
		if err := provisioning.AwaitObserved(ctx, c.deps.Client, claim.Name); err != nil {
			return err
		}
		log.FromContext(ctx).Info("created nodeclaim", "NodeClaim", klog.KObj(claim))
	}
	return nil
}

// remove deletes the claims (their termination drains the nodes through PodDisruptionBudgets).
func (c *Controller) remove(ctx context.Context, pool *v1.NodePool, claims []*v1.NodeClaim) error {
	log.FromContext(ctx).Info("deprovisioning nodeclaims to satisfy replica count", "desired", *pool.Spec.Replicas, "count", len(claims))
	for _, claim := range claims {
		if err := c.deps.Client.Delete(ctx, claim); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting nodeclaim %s, %w", claim.Name, err)
		}
		log.FromContext(ctx).Info("deleted nodeclaim", "NodeClaim", klog.KObj(claim))
	}
	return nil
}

// podsOf finds the pods bound to a claim's node in cluster state.
func (c *Controller) podsOf() func(*v1.NodeClaim) []*corev1.Pod {
	byClaim := map[string][]*corev1.Pod{}
	for _, n := range c.deps.Cluster.Snapshot().Nodes {
		if n.NodeClaim != nil {
			byClaim[n.NodeClaim.Name] = n.Pods
		}
	}
	return func(claim *v1.NodeClaim) []*corev1.Pod { return byClaim[claim.Name] }
}
