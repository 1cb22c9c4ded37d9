package informer

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// NodeDeps are what the Node informer needs.
type NodeDeps struct {
	// Reader gets Nodes; pass the manager's cached client.
	Reader client.Reader
	// Store is the store the Nodes go to.
	Store *state.NodeStore
}

// NodeController keeps a NodeStore current with the cluster's Nodes.
type NodeController struct {
	reader client.Reader
	store  *state.NodeStore
}

// NewNodeController returns the Node informer.
func NewNodeController(deps NodeDeps) *NodeController {
	return &NodeController{reader: deps.Reader, store: deps.Store}
}

// Name returns the controller's name.
func (c *NodeController) Name() string { return "state.node" }

// Register watches Nodes.
func (c *NodeController) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Node{}).
		WithOptions(options()).
		Complete(c)
}

// Reconcile copies the Node into the store, or removes it from the store once it is gone.
func (c *NodeController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return syncObject(ctx, c.reader, req, &corev1.Node{}, c.store.UpdateNode, func() { c.store.DeleteNode(req.Name) })
}
