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

// PodDeps are what the Pod informer needs.
type PodDeps struct {
	// Reader gets Pods; pass the manager's cached client.
	Reader client.Reader
	// Store is the store the Pods go to.
	Store *state.PodStore
}

// PodController keeps a PodStore current with the cluster's Pods.
type PodController struct {
	reader client.Reader
	store  *state.PodStore
}

// NewPodController returns the Pod informer.
func NewPodController(deps PodDeps) *PodController {
	return &PodController{reader: deps.Reader, store: deps.Store}
}

// Name returns the controller's name.
func (c *PodController) Name() string { return "state.pod" }

// Register watches Pods.
func (c *PodController) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Pod{}).
		WithOptions(options()).
		Complete(c)
}

// Reconcile copies the Pod into the store, or removes it from the store once it is gone.
func (c *PodController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return syncObject(ctx, c.reader, req, &corev1.Pod{}, c.store.UpdatePod, func() { c.store.DeletePod(req.NamespacedName) })
}
