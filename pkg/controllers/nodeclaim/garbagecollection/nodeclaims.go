package garbagecollection

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// collectNodeClaims deletes the launched NodeClaims whose instance is gone. A claim missing from the list is
// confirmed with Get before it goes, so that an instance the list missed isn't taken for gone.
func (c *Controller) collectNodeClaims(ctx context.Context, instances []*v1.NodeClaim, nodeClaims []v1.NodeClaim) error {
	listed := make(map[string]bool, len(instances))
	for _, instance := range instances {
		listed[instance.Status.ProviderID] = true
	}
	var errs []error
	for i := range nodeClaims {
		nodeClaim := &nodeClaims[i]
		if nodeClaim.Status.ProviderID == "" || listed[nodeClaim.Status.ProviderID] || !nodeClaim.DeletionTimestamp.IsZero() ||
			!meta.IsStatusConditionTrue(nodeClaim.Status.Conditions, v1.ConditionTypeLaunched) {
			continue
		}
		if err := c.collectNodeClaim(ctx, nodeClaim); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// collectNodeClaim deletes the NodeClaim if the provider confirms its instance is gone.
func (c *Controller) collectNodeClaim(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	_, err := c.cloud.Get(ctx, nodeClaim.Status.ProviderID)
	if err == nil {
		return nil
	}
	if !cloudprovider.IsNodeClaimNotFoundError(err) {
		return fmt.Errorf("getting instance %q, %w", nodeClaim.Status.ProviderID, err)
	}
	uid := nodeClaim.UID
	if err := c.kube.Delete(ctx, nodeClaim, client.Preconditions{UID: &uid}); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting nodeclaim whose instance is gone, %w", err))
	}
	log.FromContext(ctx).Info("garbage collected nodeclaim whose instance is gone", "NodeClaim", klog.KObj(nodeClaim),
		"Node", klog.KRef("", nodeClaim.Status.NodeName), "providerID", nodeClaim.Status.ProviderID)
	c.disrupted.WithLabelValues(metrics.ReasonGarbageCollected, nodeClaim.Labels[v1.NodePoolLabelKey], nodeClaim.Labels[v1.CapacityTypeLabelKey]).Inc()
	return nil
}
