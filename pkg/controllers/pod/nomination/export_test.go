package nomination

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ClaimFound is claimFound, for tests.
var ClaimFound = claimFound

// PodsNominatedToClaim is the NodeClaim watch's map function, for tests.
func (c *Controller) PodsNominatedToClaim(ctx context.Context, o client.Object) []reconcile.Request {
	return c.podsNominatedToClaim(ctx, o)
}
