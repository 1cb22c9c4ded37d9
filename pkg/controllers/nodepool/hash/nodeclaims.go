package hash

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// restampNodeClaims moves the pool's NodeClaims hashed under another scheme onto the current one, as
// Karpenter does when the hash version changes: a hash from another scheme says nothing about drift, so a
// claim not yet known to have drifted takes the pool's current hash, and a claim already marked Drifted
// keeps its old hash (and so stays drifted).
func (c *Controller) restampNodeClaims(ctx context.Context, np *v1.NodePool) error {
	claims := &v1.NodeClaimList{}
	if err := c.client.List(ctx, claims, client.MatchingLabels{v1.NodePoolLabelKey: np.Name}); err != nil {
		return fmt.Errorf("listing nodeclaims of nodepool %s, %w", np.Name, err)
	}
	var errs []error
	for i := range claims.Items {
		nc := &claims.Items[i]
		if nc.Annotations[v1.NodePoolHashVersionAnnotationKey] == v1.NodePoolHashVersion {
			continue
		}
		stored := nc.DeepCopy()
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[v1.NodePoolHashVersionAnnotationKey] = v1.NodePoolHashVersion
		if meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeDrifted) == nil {
			nc.Annotations[v1.NodePoolHashAnnotationKey] = np.Hash()
		}
		if err := c.client.Patch(ctx, nc, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("patching nodeclaim %s hash, %w", nc.Name, err))
		}
	}
	return errors.Join(errs...)
}
