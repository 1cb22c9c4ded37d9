package health

import (
	"context"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// allowedUnhealthyFraction is the share of a pool's nodes (rounded up) that may be unhealthy for repair to
// go on.
const allowedUnhealthyFraction = 0.2

// blocked reports whether too many of the node's neighbours are unhealthy to repair it, and if so says so
// in events.
func (c *Controller) blocked(ctx context.Context, node *corev1.Node, nodeClaim *v1.NodeClaim) (bool, error) {
	var opts []client.ListOption
	scope := "cluster"
	var nodePool *v1.NodePool
	if name, ok := nodeClaim.Labels[v1.NodePoolLabelKey]; ok {
		opts = append(opts, client.MatchingLabels{v1.NodePoolLabelKey: name})
		scope = "nodepool"
		nodePool = &v1.NodePool{}
		if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, nodePool); err != nil {
			if !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("getting nodepool, %w", err)
			}
			nodePool = nil
		}
	}
	nodes := &corev1.NodeList{}
	if err := c.kube.List(ctx, nodes, opts...); err != nil {
		return false, fmt.Errorf("listing nodes, %w", err)
	}
	unhealthy := 0
	for i := range nodes.Items {
		if c.unhealthy(&nodes.Items[i]) {
			unhealthy++
		}
	}
	if unhealthy <= int(math.Ceil(allowedUnhealthyFraction*float64(len(nodes.Items)))) {
		return false, nil
	}
	log.FromContext(ctx).Info("not repairing node, too many unhealthy nodes", "unhealthy", unhealthy, "nodes", len(nodes.Items))
	c.recorder.Publish(repairBlockedEvents(node, nodeClaim, nodePool, fmt.Sprintf("more than 20%% nodes are unhealthy in the %s", scope))...)
	return true, nil
}

// replace makes the claim's termination forceful and deletes it.
func (c *Controller) replace(ctx context.Context, node *corev1.Node, nodeClaim *v1.NodeClaim, unhealthy corev1.NodeCondition) error {
	if err := c.terminateNow(ctx, nodeClaim); err != nil {
		return err
	}
	if err := c.kube.Delete(ctx, nodeClaim); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting unhealthy nodeclaim, %w", err))
	}
	log.FromContext(ctx).Info("deleted unhealthy node", "condition", string(unhealthy.Type), "status", string(unhealthy.Status))
	c.metrics.observe(node, nodeClaim, unhealthy)
	return nil
}

// terminateNow sets the claim's termination timestamp to now, unless it is already past: the drain then
// deletes every pod at once instead of evicting through PDBs.
func (c *Controller) terminateNow(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	now := c.clock.Now()
	if value, ok := nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		if at, err := time.Parse(time.RFC3339, value); err == nil && at.Before(now) {
			return nil
		}
	}
	stored := nodeClaim.DeepCopy()
	if nodeClaim.Annotations == nil {
		nodeClaim.Annotations = map[string]string{}
	}
	nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey] = now.Format(time.RFC3339)
	if err := c.kube.Patch(ctx, nodeClaim, client.MergeFrom(stored)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("annotating nodeclaim with its termination timestamp, %w", err))
	}
	return nil
}
