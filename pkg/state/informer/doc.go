// Package informer holds the thin controllers that keep pkg/state's stores current: one per kind (Node,
// NodeClaim, Pod, DaemonSet, PodDisruptionBudget). Each reads the object from the manager's cache and hands
// it to its store, or removes it from the store when the object is gone.
//
// They are plain reconcile.Request reconcilers rather than typed object reconcilers, because those drop
// NotFound and a deletion would then never reach the store.
package informer

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// maxConcurrentReconciles lets store updates keep up with busy clusters; the stores serialise internally.
const maxConcurrentReconciles = 10

// options are the controller options every informer shares. The informers only read the API server, so
// they run on every replica, not just the leader: a standby's view is then warm when it takes over.
func options() controller.Options {
	return controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles, NeedLeaderElection: ptr.To(false)}
}

// syncObject gets obj by the request's key and passes it to update, or calls remove when it no longer exists.
func syncObject[T client.Object](ctx context.Context, reader client.Reader, req reconcile.Request, obj T, update func(T), remove func()) (reconcile.Result, error) {
	if err := reader.Get(ctx, req.NamespacedName, obj); err != nil {
		if errors.IsNotFound(err) {
			remove()
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting object, %w", err)
	}
	update(obj)
	return reconcile.Result{}, nil
}
