package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	nodeclaimtermination "github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/termination"
)

// instanceGone reports whether the cloud provider no longer has the node's instance.
func (c *Controller) instanceGone(ctx context.Context, node *corev1.Node, nodeClaim *v1.NodeClaim) (bool, error) {
	providerID := instanceOf(node, nodeClaim).Status.ProviderID
	if providerID == "" {
		return false, nil
	}
	_, err := c.cloud.Get(ctx, providerID)
	if cloudprovider.IsNodeClaimNotFoundError(err) {
		log.FromContext(ctx).Info("instance is gone, skipping drain", "providerID", providerID)
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("getting instance, %w", err)
	}
	return false, nil
}

// terminateInstance terminates the node's instance (see the NodeClaim termination package's
// Instances.Terminate) and returns how long to wait before asking again, zero once it is gone.
func (c *Controller) terminateInstance(ctx context.Context, node *corev1.Node, nodeClaim *v1.NodeClaim, _ *time.Time) (time.Duration, error) {
	instance := instanceOf(node, nodeClaim)
	if instance.Status.ProviderID == "" {
		return 0, nil
	}
	gone, err := c.instances.Terminate(ctx, instance, func(err error) { c.recorder.Publish(failedTerminationEvent(node, err)) })
	if err != nil || gone {
		return 0, err
	}
	return nodeclaimtermination.InstancePollInterval, nil
}

// instanceOf returns the NodeClaim to hand to the cloud provider: the Node's claim, or, for a Node whose
// claim is gone, a stand-in carrying the Node's provider ID.
func instanceOf(node *corev1.Node, nodeClaim *v1.NodeClaim) *v1.NodeClaim {
	if nodeClaim != nil && nodeClaim.Status.ProviderID != "" {
		return nodeClaim
	}
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: node.Labels},
		Status:     v1.NodeClaimStatus{ProviderID: node.Spec.ProviderID, NodeName: node.Name},
	}
}
