package termination

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
)

// This file owns the two rules the NodeClaim and Node termination controllers share: the termination
// deadline and terminating the instance. The Node termination controller calls them too.

// InstancePollInterval is how often CloudProvider.Delete is called again while the instance terminates.
const InstancePollInterval = 5 * time.Second

// reasonInstanceTerminating is the reason of the InstanceTerminating condition.
const reasonInstanceTerminating = "InstanceTerminating"

// Deadline returns when every pod must have left the claim's Node, or nil when nothing bounds the drain.
// The karpenter.sh/nodeclaim-termination-timestamp annotation decides whenever it is present, whoever set
// it: node repair and failing instance status checks set it to "now" to force the drain, also on claims
// whose NodePool has no terminationGracePeriod. Without the annotation, a claim that is being deleted and
// has a spec.terminationGracePeriod gets its deletion timestamp plus that period, recorded in the
// annotation so that later calls (and restarts) read it back. The record is written with an optimistic
// lock: a writer that stamped the annotation in the meantime wins, and the caller sees a conflict.
func Deadline(ctx context.Context, kube client.Client, nodeClaim *v1.NodeClaim) (*time.Time, error) {
	if nodeClaim == nil {
		return nil, nil
	}
	if value, ok := nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		if deadline, err := time.Parse(time.RFC3339, value); err == nil {
			return &deadline, nil
		}
		log.FromContext(ctx).Info("ignoring unparsable termination timestamp annotation", "value", value)
	}
	if nodeClaim.Spec.TerminationGracePeriod == nil || nodeClaim.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	deadline := nodeClaim.DeletionTimestamp.Add(nodeClaim.Spec.TerminationGracePeriod.Duration)
	stored := nodeClaim.DeepCopy()
	if nodeClaim.Annotations == nil {
		nodeClaim.Annotations = map[string]string{}
	}
	nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey] = deadline.Format(time.RFC3339)
	if err := fieldpatch.Patch(ctx, kube, nodeClaim, stored, fieldpatch.Keys("metadata", "annotations")); err != nil {
		return nil, client.IgnoreNotFound(fmt.Errorf("annotating nodeclaim with its termination timestamp, %w", err))
	}
	return &deadline, nil
}

// Instances terminates the instances of NodeClaims.
type Instances struct {
	Kube  client.Client
	Cloud cloudprovider.CloudProvider
	Clock clock.Clock
}

// Terminate asks the cloud provider to terminate the claim's instance and reports whether it is gone
// (NodeClaimNotFound). While it terminates, the claim's InstanceTerminating condition is set, unless the
// claim is a stand-in built for a Node whose NodeClaim is gone (no UID: nothing stored to record it on).
// A claim without a provider ID is asked about too: its launch may not have been recorded, and the
// provider finds an instance by the claim it was launched for. failed is called with the provider's error
// when the provider fails (the caller's event).
func (i Instances) Terminate(ctx context.Context, nodeClaim *v1.NodeClaim, failed func(error)) (bool, error) {
	err := i.Cloud.Delete(ctx, nodeClaim)
	if cloudprovider.IsNodeClaimNotFoundError(err) {
		return true, nil
	}
	if err != nil {
		failed(err)
		return false, fmt.Errorf("terminating instance, %w", err)
	}
	if nodeClaim.UID == "" {
		return false, nil
	}
	stored := nodeClaim.DeepCopy()
	if !meta.SetStatusCondition(&nodeClaim.Status.Conditions, metav1.Condition{
		Type:               v1.ConditionTypeInstanceTerminating,
		Status:             metav1.ConditionTrue,
		Reason:             reasonInstanceTerminating,
		ObservedGeneration: nodeClaim.Generation,
		LastTransitionTime: metav1.NewTime(i.Clock.Now()),
	}) {
		return false, nil
	}
	if err := fieldpatch.PatchStatus(ctx, i.Kube, nodeClaim, stored, fieldpatch.Whole("status", "conditions")); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("setting nodeclaim condition %s, %w", v1.ConditionTypeInstanceTerminating, err)
	}
	log.FromContext(ctx).Info("terminating instance", "providerID", nodeClaim.Status.ProviderID)
	return false, nil
}
