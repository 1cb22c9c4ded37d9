package lifecycle

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// NodeClaimsForNode exposes the Node watch's mapping to the black-box tests.
func (c *Controller) NodeClaimsForNode(ctx context.Context, node client.Object) []reconcile.Request {
	return c.nodeClaimsForNode(ctx, node)
}
