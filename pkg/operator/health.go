package operator

import (
	"context"
	"errors"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// cacheSyncTimeout bounds how long one /readyz request waits for the informer caches.
const cacheSyncTimeout = time.Second

// cacheSynced is a readiness check that passes once the informer cache has started and every informer in it
// has synced.
func cacheSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), cacheSyncTimeout)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("informer caches have not synced")
		}
		return nil
	}
}
