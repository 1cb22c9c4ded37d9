package counter

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// setCost sets karpenter_nodepools_cost_total: the summed hourly price of the pool's launched NodeClaims,
// each at the offering its labels name (instance type, zone, capacity type, reservation). A claim whose
// offering the provider no longer lists adds nothing. Failures keep the last value and are logged: the
// gauge is an estimate and must not hold up the pool's status.
func (c *Controller) setCost(ctx context.Context, nodePool *v1.NodePool) {
	if c.cloud == nil {
		return
	}
	claims := &v1.NodeClaimList{}
	// The claims are only read: the cache's own objects do, uncopied.
	if err := c.client.List(ctx, claims, client.MatchingLabels{v1.NodePoolLabelKey: nodePool.Name}, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing the nodepool's nodeclaims for its cost")
		c.metrics.costErrors.WithLabelValues(nodePool.Name).Inc()
		return
	}
	its, err := c.cloud.GetInstanceTypes(ctx, nodePool)
	if err != nil {
		log.FromContext(ctx).Error(err, "listing the nodepool's instance types for its cost")
		c.metrics.costErrors.WithLabelValues(nodePool.Name).Inc()
		return
	}
	byName := make(map[string]*cloudprovider.InstanceType, len(its))
	for _, it := range its {
		byName[it.Name] = it
	}
	total := 0.0
	for i := range claims.Items {
		total += byName[claims.Items[i].Labels[v1.LabelInstanceType]].LaunchedPrice(&claims.Items[i])
	}
	c.metrics.cost.WithLabelValues(nodePool.Name).Set(total)
}
