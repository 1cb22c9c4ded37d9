package lifecycle

import (
	"context"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Liveness timeouts, measured from the claim's creation (Karpenter's values).
const (
	// LaunchTimeout is how long a claim may take to be Launched.
	LaunchTimeout = 5 * time.Minute
	// RegistrationTimeout is how long a claim may take to be Registered.
	RegistrationTimeout = 15 * time.Minute
)

// liveness deletes claims that don't launch or register in time, so that their pods are planned again
// (possibly on other instance types or zones).
type liveness struct {
	kubeClient client.Client
	clock      clock.Clock
	metrics    *lifecycleMetrics
}

func (l *liveness) reconcile(ctx context.Context, nodeClaim *v1.NodeClaim) (outcome, error) {
	if isTrue(nodeClaim, v1.ConditionTypeRegistered) {
		return outcome{}, nil
	}
	timeout, stage := RegistrationTimeout, v1.ConditionTypeRegistered
	if !isTrue(nodeClaim, v1.ConditionTypeLaunched) {
		timeout, stage = LaunchTimeout, v1.ConditionTypeLaunched
	}
	// One clock reading decides both the deletion and the requeue, so they can't disagree.
	left := nodeClaim.CreationTimestamp.Add(timeout).Sub(l.clock.Now())
	if left > 0 {
		return outcome{requeueAfter: left}, nil
	}
	log.FromContext(ctx).Info("deleting nodeclaim that timed out", "condition", stage, "timeout", timeout)
	if err := deleteNodeClaim(ctx, l.kubeClient, nodeClaim); err != nil {
		return outcome{}, err
	}
	l.metrics.countDisrupted(nodeClaim, DisruptedReasonLiveness)
	return outcome{deleted: true}, nil
}
