package informer

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// NodeClaimDeps are what the NodeClaim informer needs.
type NodeClaimDeps struct {
	// Reader gets NodeClaims; pass the manager's cached client.
	Reader client.Reader
	// Store is the store the NodeClaims go to.
	Store *state.NodeStore
}

// NodeClaimController keeps a NodeStore current with the cluster's NodeClaims.
type NodeClaimController struct {
	reader client.Reader
	store  *state.NodeStore
}

// NewNodeClaimController returns the NodeClaim informer.
func NewNodeClaimController(deps NodeClaimDeps) *NodeClaimController {
	return &NodeClaimController{reader: deps.Reader, store: deps.Store}
}

// Name returns the controller's name.
func (c *NodeClaimController) Name() string { return "state.nodeclaim" }

// Register watches NodeClaims.
func (c *NodeClaimController) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodeClaim{}).
		WithOptions(options()).
		Complete(c)
}

// Reconcile copies the NodeClaim into the store, or removes it from the store once it is gone.
func (c *NodeClaimController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return syncObject(ctx, c.reader, req, &v1.NodeClaim{}, c.store.UpdateNodeClaim, func() { c.store.DeleteNodeClaim(req.Name) })
}
