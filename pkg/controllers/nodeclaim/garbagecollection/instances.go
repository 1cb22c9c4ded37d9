package garbagecollection

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// collectInstances terminates the instances no NodeClaim refers to that are old enough, and deletes their
// Nodes.
func (c *Controller) collectInstances(ctx context.Context, instances []*v1.NodeClaim, nodeClaims []v1.NodeClaim) error {
	claimed := make(map[string]bool, len(nodeClaims))
	recording := make(map[string]bool)      // claims whose launch hasn't recorded a provider ID yet, by name
	recordingPools := make(map[string]bool) // the NodePools of those claims
	for i := range nodeClaims {
		if id := nodeClaims[i].Status.ProviderID; id != "" {
			claimed[id] = true
		} else {
			recording[nodeClaims[i].Name] = true
			recordingPools[nodeClaims[i].Labels[v1.NodePoolLabelKey]] = true
		}
	}
	var errs []error
	for _, instance := range instances {
		// An instance launched for a claim that has no provider ID yet is that claim's (after a crash between
		// launch and recording, say, the launch is retried and finds it): providers name instances after their
		// claims.
		// An instance without a name (a batched launch whose claims crashed before naming it) may still be
		// adopted by a claim of its pool that is launching.
		if claimed[instance.Status.ProviderID] || recording[instance.Name] || !instance.DeletionTimestamp.IsZero() ||
			instance.Name == "" && recordingPools[instance.Labels[v1.NodePoolLabelKey]] ||
			c.clock.Since(instance.CreationTimestamp.Time) <= orphanMinAge {
			continue
		}
		if err := c.terminate(ctx, instance); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// terminate ends a leaked instance and deletes its Node.
func (c *Controller) terminate(ctx context.Context, instance *v1.NodeClaim) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("providerID", instance.Status.ProviderID))
	if err := c.cloud.Delete(ctx, instance); cloudprovider.IgnoreNodeClaimNotFoundError(err) != nil {
		return fmt.Errorf("terminating leaked instance %q, %w", instance.Status.ProviderID, err)
	}
	log.FromContext(ctx).Info("garbage collected instance with no nodeclaim")
	node, err := c.nodeByProviderID(ctx, instance.Status.ProviderID)
	if err != nil || node == nil {
		return err
	}
	if err := c.kube.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting node of leaked instance, %w", err)
	}
	log.FromContext(ctx).Info("garbage collected node of instance with no nodeclaim", "Node", klog.KObj(node))
	return nil
}
