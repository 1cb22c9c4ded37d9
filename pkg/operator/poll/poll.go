// Package poll registers controllers that poll rather than watch: one reconcile at start, and after that
// whenever the reconciler asks to run again (RequeueAfter). Garbage collection and the interruption
// queue are such controllers.
package poll

import (
	"context"
	"fmt"

	"k8s.io/client-go/util/workqueue"
	controllerruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Register adds a controller named name to the manager that reconciles once when it starts, with an empty
// request; r's RequeueAfter sets the period from then on.
func Register(mgr manager.Manager, name string, r reconcile.Reconciler) error {
	start := source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.Add(reconcile.Request{})
		return nil
	})
	if err := controllerruntime.NewControllerManagedBy(mgr).Named(name).WatchesRawSource(start).Complete(r); err != nil {
		return fmt.Errorf("building %s controller, %w", name, err)
	}
	return nil
}
