package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex"
	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
)

// nodeClaimForNode returns the NodeClaim whose instance the Node is, or nil when there is none. The
// provider ID decides; the node name is the fallback for claims whose status has no provider ID yet.
func (c *Controller) nodeClaimForNode(ctx context.Context, node *corev1.Node) (*v1.NodeClaim, error) {
	claims, err := fieldindex.NodeClaimsForNode(ctx, c.kube, node)
	if err != nil || len(claims) == 0 {
		return nil, err
	}
	return claims[0], nil
}

// deleteNodeClaim deletes the Node's NodeClaim unless its deletion has begun, and returns it as it is
// afterwards (nil once it is gone). The NodeClaim termination controller keeps the claim until this Node is
// gone.
func (c *Controller) deleteNodeClaim(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	if nodeClaim == nil || !nodeClaim.DeletionTimestamp.IsZero() {
		return nodeClaim, nil
	}
	if err := c.kube.Delete(ctx, nodeClaim); client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("deleting nodeclaim, %w", err)
	}
	log.FromContext(ctx).Info("deleting nodeclaim of deleted node")
	if err := c.kube.Get(ctx, client.ObjectKeyFromObject(nodeClaim), nodeClaim); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting nodeclaim, %w", err)
	}
	return nodeClaim, nil
}

// setCondition sets a termination condition on the NodeClaim's status and reports whether it changed.
// A Node without a NodeClaim has nowhere to record progress, so the call does nothing.
func (c *Controller) setCondition(ctx context.Context, nodeClaim *v1.NodeClaim, conditionType string, status metav1.ConditionStatus, reason, message string) (bool, error) {
	if nodeClaim == nil {
		return false, nil
	}
	stored := nodeClaim.DeepCopy()
	changed := meta.SetStatusCondition(&nodeClaim.Status.Conditions, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: nodeClaim.Generation,
		LastTransitionTime: metav1.NewTime(c.clock.Now()),
	})
	if !changed {
		return false, nil
	}
	if err := fieldpatch.PatchStatus(ctx, c.kube, nodeClaim, stored, fieldpatch.Whole("status", "conditions")); err != nil {
		return false, client.IgnoreNotFound(fmt.Errorf("setting nodeclaim condition %s, %w", conditionType, err))
	}
	return true, nil
}

// deadlinePassed reports whether the node's termination deadline, if it has one, has been reached.
func deadlinePassed(deadline *time.Time, now time.Time) bool {
	return deadline != nil && !now.Before(*deadline)
}
