package informer

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// PDBDeps are what the PDB informer needs.
type PDBDeps struct {
	// Reader gets PDBs; pass the manager's cached client.
	Reader client.Reader
	// Store is the store the PDBs go to.
	Store *state.PDBStore
}

// PDBController keeps a PDBStore current with the cluster's PodDisruptionBudgets.
type PDBController struct {
	reader client.Reader
	store  *state.PDBStore
}

// NewPDBController returns the PDB informer.
func NewPDBController(deps PDBDeps) *PDBController {
	return &PDBController{reader: deps.Reader, store: deps.Store}
}

// Name returns the controller's name.
func (c *PDBController) Name() string { return "state.pdb" }

// Register watches PDBs.
func (c *PDBController) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&policyv1.PodDisruptionBudget{}).
		WithOptions(options()).
		Complete(c)
}

// Reconcile copies the PDB into the store, or removes it from the store once it is gone.
func (c *PDBController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return syncObject(ctx, c.reader, req, &policyv1.PodDisruptionBudget{}, c.store.UpdatePDB, func() { c.store.DeletePDB(req.NamespacedName) })
}
