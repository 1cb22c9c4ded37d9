package informer

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// DaemonSetDeps are what the DaemonSet informer needs.
type DaemonSetDeps struct {
	// Reader gets DaemonSets; pass the manager's cached client.
	Reader client.Reader
	// Store is the store the DaemonSets go to.
	Store *state.DaemonSetStore
}

// DaemonSetController keeps a DaemonSetStore current with the cluster's DaemonSets.
type DaemonSetController struct {
	reader client.Reader
	store  *state.DaemonSetStore
}

// NewDaemonSetController returns the DaemonSet informer.
func NewDaemonSetController(deps DaemonSetDeps) *DaemonSetController {
	return &DaemonSetController{reader: deps.Reader, store: deps.Store}
}

// Name returns the controller's name.
func (c *DaemonSetController) Name() string { return "state.daemonset" }

// Register watches DaemonSets.
func (c *DaemonSetController) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&appsv1.DaemonSet{}).
		WithOptions(options()).
		Complete(c)
}

// Reconcile copies the DaemonSet into the store, or removes it from the store once it is gone.
func (c *DaemonSetController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return syncObject(ctx, c.reader, req, &appsv1.DaemonSet{}, c.store.UpdateDaemonSet, func() { c.store.DeleteDaemonSet(req.NamespacedName) })
}
