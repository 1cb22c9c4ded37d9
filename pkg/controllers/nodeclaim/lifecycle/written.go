package lifecycle

import (
	"strconv"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// written keeps, by the name of the NodeClaim they belong to (the claim, its Node), objects as the API server returned them after this controller's last write to
// them, until the cache shows that version or a later one. Under load the cache shows a write seconds late,
// and a reconcile in between (the claim's Node changed) would build on the copy from before the write: it
// would launch-populate or register again, and its write would fail the guard of the values it replaces
// (pkg/fieldpatch), costing a failed write and a read from the API server. The copy the API server returned
// is the newest one this controller knows of.
type written[T client.Object] struct {
	objects sync.Map // claim name → T
}

// store records obj, the claim's or its Node, as the API server returned it after a write.
func (w *written[T]) store(claim string, obj T) {
	w.objects.Store(claim, obj.DeepCopyObject().(T))
}

// forget drops the written copy kept for the claim.
func (w *written[T]) forget(claim string) { w.objects.Delete(claim) }

// newest returns a copy of the object written for the claim when it is cached's newer version (same UID, a
// greater resource version); otherwise cached, and the written copy is dropped once the cache has caught up
// with it.
func (w *written[T]) newest(claim string, cached T) T {
	v, ok := w.objects.Load(claim)
	if !ok {
		return cached
	}
	own := v.(T)
	if own.GetUID() == cached.GetUID() && newerVersion(own.GetResourceVersion(), cached.GetResourceVersion()) {
		return own.DeepCopyObject().(T)
	}
	w.objects.CompareAndDelete(claim, v)
	return cached
}

// newerVersion reports whether resource version a is later than b. Resource versions are opaque to clients
// in general, but the API server's etcd storage gives every write a larger integer (the kube-scheduler's
// assume cache compares them the same way); anything that is not an integer counts as not newer.
func newerVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x > y
}
