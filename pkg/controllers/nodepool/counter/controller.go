package counter

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// resourceNodes is the pseudo-resource that counts nodes in NodePool limits and status.resources.
const resourceNodes corev1.ResourceName = "nodes"

// Deps are what the counter needs.
type Deps struct {
	// Client reads NodePools, NodeClaims and Nodes (the manager's cached client) and patches NodePool status.
	Client client.Client
	// Registerer receives the karpenter_nodepools_usage and karpenter_nodepools_limit gauges.
	Registerer prometheus.Registerer
}

// Controller keeps NodePool status.resources and status.nodes current.
type Controller struct {
	client  client.Client
	metrics *poolMetrics
}

// NewController returns the NodePool counter.
func NewController(deps Deps) *Controller {
	return &Controller{client: deps.Client, metrics: newPoolMetrics(deps.Registerer)}
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
	usage, count, err := c.count(ctx, nodePool.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	c.metrics.set(nodePool.Name, usage, corev1.ResourceList(nodePool.Spec.Limits))
	if equality.Semantic.DeepEqual(nodePool.Status.Resources, usage) &&
		nodePool.Status.Nodes != nil && *nodePool.Status.Nodes == count {
		return reconcile.Result{}, nil
	}
	stored := nodePool.DeepCopy()
	nodePool.Status.Resources = usage
	nodePool.Status.Nodes = &count
	if err := c.client.Status().Patch(ctx, nodePool, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool status, %w", err))
	}
	log.FromContext(ctx).V(1).Info("updated nodepool usage", "nodes", count)
	return reconcile.Result{}, nil
}

// count sums the capacity of the pool's machines that are launched and not being deleted. A machine is a
// NodeClaim joined to its Node by provider ID, or a Node of the pool without a NodeClaim.
func (c *Controller) count(ctx context.Context, pool string) (corev1.ResourceList, int64, error) {
	claims := &v1.NodeClaimList{}
	if err := c.client.List(ctx, claims, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		return nil, 0, fmt.Errorf("listing nodeclaims, %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := c.client.List(ctx, nodes, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		return nil, 0, fmt.Errorf("listing nodes, %w", err)
	}
	nodesByID := map[string]*corev1.Node{}
	for i := range nodes.Items {
		if id := nodes.Items[i].Spec.ProviderID; id != "" {
			nodesByID[id] = &nodes.Items[i]
		}
	}
	usage := corev1.ResourceList{}
	var count int64
	claimed := map[string]bool{}
	for i := range claims.Items {
		nc := &claims.Items[i]
		if nc.Status.ProviderID == "" {
			continue // not launched: it holds nothing yet
		}
		claimed[nc.Status.ProviderID] = true
		node := nodesByID[nc.Status.ProviderID]
		if !nc.DeletionTimestamp.IsZero() || (node != nil && !node.DeletionTimestamp.IsZero()) {
			continue
		}
		capacity := nc.Status.Capacity
		if len(capacity) == 0 && node != nil {
			capacity = node.Status.Capacity
		}
		add(usage, capacity)
		count++
	}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if claimed[node.Spec.ProviderID] || !node.DeletionTimestamp.IsZero() {
			continue
		}
		add(usage, node.Status.Capacity)
		count++
	}
	usage[resourceNodes] = *resource.NewQuantity(count, resource.DecimalSI)
	return usage, count, nil
}

// add adds capacity into usage, leaving out any "nodes" entry.
func add(usage, capacity corev1.ResourceList) {
	for name, q := range capacity {
		if name == resourceNodes {
			continue
		}
		sum := usage[name]
		sum.Add(q)
		usage[name] = sum
	}
}

// ownerPool maps a NodeClaim or Node to the NodePool its label names.
func ownerPool(_ context.Context, obj client.Object) []reconcile.Request {
	pool := obj.GetLabels()[v1.NodePoolLabelKey]
	if pool == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
}
