package interruption

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/events"
)

// handler is what both controllers do with an instance an interruption is about: warn, and replace it for
// the kinds that end it. The queue controller and the health controller differ only in how they learn of
// the interruption.
type handler struct {
	kube      client.Client
	clock     clock.Clock
	recorder  events.Recorder
	disrupted *prometheus.CounterVec
}

// interrupt publishes the warning for the kind on the NodeClaim and its Node (nil for none), and replaces
// the instance when the kind calls for it.
func (h *handler) interrupt(ctx context.Context, kind cloudprovider.InterruptionKind, nodeClaim *v1.NodeClaim, node *corev1.Node) error {
	h.recorder.Publish(noticeEvents(kind, nodeClaim, node)...)
	return h.act(ctx, kind, nodeClaim, node)
}

// act deletes the NodeClaim for the kinds that end the instance; its termination taints and drains the
// Node while the provisioner replaces it. For a failing status check the NodeClaim is first given its
// termination timestamp (now), so that the drain doesn't wait on disruption budgets or volumes of an
// instance that is already broken.
func (h *handler) act(ctx context.Context, kind cloudprovider.InterruptionKind, nodeClaim *v1.NodeClaim, node *corev1.Node) error {
	if !replaces(kind) || !nodeClaim.DeletionTimestamp.IsZero() {
		return nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodeClaim", klog.KObj(nodeClaim)))
	if forceful(kind) {
		if err := h.stampTermination(ctx, nodeClaim); err != nil {
			return err
		}
	}
	if err := h.kube.Delete(ctx, nodeClaim); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting interrupted nodeclaim, %w", err))
	}
	log.FromContext(ctx).Info("deleting nodeclaim on interruption message")
	h.recorder.Publish(terminatingEvents(nodeClaim, node)...)
	h.disrupted.WithLabelValues(string(kind), nodeClaim.Labels[v1.NodePoolLabelKey], nodeClaim.Labels[v1.CapacityTypeLabelKey]).Inc()
	return nil
}

// stampTermination sets the NodeClaim's termination timestamp annotation to now, unless it has one.
func (h *handler) stampTermination(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	if _, ok := nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		return nil
	}
	before := nodeClaim.DeepCopy()
	if nodeClaim.Annotations == nil {
		nodeClaim.Annotations = map[string]string{}
	}
	nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey] = h.clock.Now().UTC().Format(time.RFC3339)
	if err := h.kube.Patch(ctx, nodeClaim, client.MergeFrom(before)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("setting the termination timestamp of an unhealthy nodeclaim, %w", err))
	}
	return nil
}

// replaces reports whether a message of the kind means the instance must be replaced.
func replaces(kind cloudprovider.InterruptionKind) bool {
	switch kind {
	case cloudprovider.InterruptionSpot, cloudprovider.InterruptionScheduledChange, cloudprovider.InterruptionStopped,
		cloudprovider.InterruptionTerminated, cloudprovider.InterruptionCapacityReservation,
		cloudprovider.InterruptionInstanceStatus, cloudprovider.InterruptionSystemStatus, cloudprovider.InterruptionEventStatus:
		return true
	}
	return false
}

// forceful reports whether the kind is a failing status check, whose instance isn't drained gracefully.
func forceful(kind cloudprovider.InterruptionKind) bool {
	return kind == cloudprovider.InterruptionInstanceStatus || kind == cloudprovider.InterruptionSystemStatus
}

// instance returns the NodeClaim and Node with the provider ID; either may be nil, and both are for an
// empty provider ID (an instance the provider doesn't know, or a message about none).
func (h *handler) instance(ctx context.Context, providerID string) (*v1.NodeClaim, *corev1.Node, error) {
	if providerID == "" {
		return nil, nil, nil
	}
	nodeClaims := &v1.NodeClaimList{}
	if err := h.kube.List(ctx, nodeClaims); err != nil {
		return nil, nil, fmt.Errorf("listing nodeclaims, %w", err)
	}
	var nodeClaim *v1.NodeClaim
	for i := range nodeClaims.Items {
		if nodeClaims.Items[i].Status.ProviderID == providerID {
			nodeClaim = &nodeClaims.Items[i]
		}
	}
	nodes := &corev1.NodeList{}
	if err := h.kube.List(ctx, nodes); err != nil {
		return nil, nil, fmt.Errorf("listing nodes, %w", err)
	}
	for i := range nodes.Items {
		if nodes.Items[i].Spec.ProviderID == providerID {
			return nodeClaim, &nodes.Items[i], nil
		}
	}
	return nodeClaim, nil, nil
}
