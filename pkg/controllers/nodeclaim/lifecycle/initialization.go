package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// Reasons of the Initialized condition set by this package.
const (
	ReasonNotRegistered             = "NotRegistered"
	ReasonNodeNotReady              = "NodeNotReady"
	ReasonStartupTaintsExist        = "StartupTaintsExist"
	ReasonKnownEphemeralTaintsExist = "KnownEphemeralTaintsExist"
	ReasonResourceNotRegistered     = "ResourceNotRegistered"
)

// initialization waits for the claim's Node to be usable, then labels it initialized (unless registration
// did, in the same write that registered it).
type initialization struct {
	kubeClient client.Client
	clock      clock.Clock
	// written is registration's: the Node as registration last wrote it, newer than the cache for a while.
	written *written[*corev1.Node]
}

func (i *initialization) reconcile(ctx context.Context, nodeClaim *v1.NodeClaim) (outcome, error) {
	if isTrue(nodeClaim, v1.ConditionTypeInitialized) {
		return outcome{}, nil
	}
	now := i.clock.Now()
	if !isTrue(nodeClaim, v1.ConditionTypeRegistered) {
		setUnknown(nodeClaim, now, v1.ConditionTypeInitialized, ReasonNotRegistered, "node not registered")
		return outcome{}, nil
	}
	node := &corev1.Node{}
	if err := i.kubeClient.Get(ctx, client.ObjectKey{Name: nodeClaim.Status.NodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			setUnknown(nodeClaim, now, v1.ConditionTypeInitialized, ReasonNodeNotFound, "node not found")
			return outcome{}, nil
		}
		return outcome{}, fmt.Errorf("getting node, %w", err)
	}
	if i.written != nil {
		node = i.written.newest(nodeClaim.Name, node)
	}
	// The Node watch reconciles the claim again whenever the Node changes, so no requeue is needed.
	if reason, message := notInitialized(nodeClaim, node); reason != "" {
		setUnknown(nodeClaim, now, v1.ConditionTypeInitialized, reason, message)
		return outcome{}, nil
	}
	if node.Labels[v1.NodeInitializedLabelKey] != "true" {
		stored := node.DeepCopy()
		node.Labels = mergeMaps(node.Labels, map[string]string{v1.NodeInitializedLabelKey: "true"})
		if err := i.kubeClient.Patch(ctx, node, client.MergeFrom(stored)); err != nil {
			return outcome{}, fmt.Errorf("labeling node initialized, %w", err)
		}
	}
	log.FromContext(ctx).WithValues("Node", klog.KObj(node)).Info("initialized nodeclaim")
	setTrue(nodeClaim, now, v1.ConditionTypeInitialized)
	if i.written != nil {
		i.written.forget(nodeClaim.Name) // registration is done with it
	}
	return outcome{}, nil
}

// notInitialized returns the reason and message of the first thing that keeps the Node from being
// initialized, or "" when nothing does.
func notInitialized(nodeClaim *v1.NodeClaim, node *corev1.Node) (string, string) {
	if !nodeReady(node) {
		return ReasonNodeNotReady, "node not ready"
	}
	for _, t := range nodeClaim.Spec.StartupTaints {
		if hasTaint(node.Spec.Taints, t) {
			return ReasonStartupTaintsExist, fmt.Sprintf("startup taint %s still present", t.Key)
		}
	}
	for _, t := range node.Spec.Taints {
		if v1.IsKnownEphemeralTaint(t.Key) {
			return ReasonKnownEphemeralTaintsExist, fmt.Sprintf("ephemeral taint %s still present", t.Key)
		}
	}
	for _, name := range extendedResources(nodeClaim) {
		if q, ok := node.Status.Allocatable[name]; !ok || q.Sign() <= 0 {
			return ReasonResourceNotRegistered, fmt.Sprintf("resource %s not registered", name)
		}
	}
	return "", ""
}

// nodeReady reports whether the Node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	return scheduling.NodeReadyStatus(node) == corev1.ConditionTrue
}

// extendedResources returns, sorted, the resources other than cpu, memory, pods and ephemeral storage that
// the claim requests or its instance has, with a non-zero quantity: device plugins must register them.
func extendedResources(nodeClaim *v1.NodeClaim) []corev1.ResourceName {
	wanted := map[corev1.ResourceName]bool{}
	for _, list := range []corev1.ResourceList{nodeClaim.Spec.Resources.Requests, nodeClaim.Status.Capacity} {
		for name, q := range list {
			if !wellKnownResource(name) && !q.IsZero() {
				wanted[name] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(wanted))
}

// wellKnownResource reports whether the kubelet reports the resource without a device plugin.
func wellKnownResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
		return true
	}
	return false
}
