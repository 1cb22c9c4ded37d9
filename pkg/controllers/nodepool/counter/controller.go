package counter

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

const (
	// syncRetryInterval is how soon a pass that found the cluster state unsynced runs again.
	syncRetryInterval = time.Second
	// recountInterval is how often a pool is recounted without an event: the state's informers and this
	// controller see the same events in no set order, so a pass may read the state just before it moves.
	recountInterval = 5 * time.Second
)

// Deps are what the counter needs.
type Deps struct {
	// Client reads NodePools (the manager's cached client) and patches NodePool status.
	Client client.Client
	// Cluster is the cluster state, which owns what a pool's machines add up to.
	Cluster ClusterState
	// Registerer receives the karpenter_nodepools_usage, _limit and _cost_total gauges.
	Registerer prometheus.Registerer
	// CloudProvider prices the pool's NodeClaims for karpenter_nodepools_cost_total; nil leaves the cost out.
	CloudProvider cloudprovider.CloudProvider
}

// ClusterState is what the counter reads of pkg/state.
type ClusterState interface {
	// Synced reports whether the state reflects every Node and NodeClaim the API server has.
	Synced(ctx context.Context) bool
	// NodePoolResources returns what the pool's status.resources report, with the node count under "nodes".
	NodePoolResources(nodePool string) corev1.ResourceList
}

// Controller keeps NodePool status.resources and status.nodes current.
type Controller struct {
	client  client.Client
	cluster ClusterState
	cloud   cloudprovider.CloudProvider
	metrics *poolMetrics
}

// NewController returns the NodePool counter.
func NewController(deps Deps) *Controller {
	return &Controller{client: deps.Client, cluster: deps.Cluster, cloud: deps.CloudProvider, metrics: newPoolMetrics(deps.Registerer)}
}

// Name returns the controller's name.
func (c *Controller) Name() string { return "nodepool.counter" }

// Register watches NodePools, and the NodeClaims and Nodes of each pool.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodePool{}).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(ownerPool)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(ownerPool)).
		Complete(c)
}

// Reconcile recounts the pool's machines and patches its status when the count changed. It takes a plain
// request, not the NodePool, so that it still runs when the pool is gone and can drop the pool's gauges.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodePool", klog.KRef("", req.Name)))
	nodePool := &v1.NodePool{}
	if err := c.client.Get(ctx, req.NamespacedName, nodePool); err != nil {
		if errors.IsNotFound(err) {
			c.metrics.forget(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting nodepool, %w", err)
	}
	if !nodePool.DeletionTimestamp.IsZero() {
		c.metrics.forget(nodePool.Name)
		return reconcile.Result{}, nil
	}
	// On a partial view the count would drop and the status would flap.
	if !c.cluster.Synced(ctx) {
		return reconcile.Result{RequeueAfter: syncRetryInterval}, nil
	}
	usage := c.cluster.NodePoolResources(nodePool.Name)
	nodes := usage[v1.ResourceNodes]
	count := nodes.Value()
	c.metrics.set(nodePool.Name, usage, corev1.ResourceList(nodePool.Spec.Limits))
	c.setCost(ctx, nodePool)
	if equality.Semantic.DeepEqual(nodePool.Status.Resources, usage) &&
		nodePool.Status.Nodes != nil && *nodePool.Status.Nodes == count {
		return reconcile.Result{RequeueAfter: recountInterval}, nil
	}
	stored := nodePool.DeepCopy()
	nodePool.Status.Resources = usage
	nodePool.Status.Nodes = &count
	if err := c.client.Status().Patch(ctx, nodePool, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool status, %w", err))
	}
	log.FromContext(ctx).V(1).Info("updated nodepool usage", "nodes", count)
	return reconcile.Result{RequeueAfter: recountInterval}, nil
}

// ownerPool maps a NodeClaim or Node to the NodePool its label names.
func ownerPool(_ context.Context, obj client.Object) []reconcile.Request {
	pool := obj.GetLabels()[v1.NodePoolLabelKey]
	if pool == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
}
