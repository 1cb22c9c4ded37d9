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

// NodeOfClaim is nodeOfClaim, for tests.
func (c *Controller) NodeOfClaim(ctx context.Context, name string) (string, error) {
	return c.nodeOfClaim(ctx, name)
}

// PodsNominatedTo is the Node watch's map function, for tests.
func (c *Controller) PodsNominatedTo(ctx context.Context, o client.Object) []reconcile.Request {
	return c.podsNominatedTo(ctx, o)
}
