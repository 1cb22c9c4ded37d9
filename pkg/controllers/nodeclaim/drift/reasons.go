package drift

import (
	"context"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// Drift reasons found from the NodePool, as Karpenter names them.
const (
	ReasonNodePoolDrifted     cloudprovider.DriftReason = "NodePoolDrifted"
	ReasonRequirementsDrifted cloudprovider.DriftReason = "RequirementsDrifted"
)

// driftReason returns the first reason the claim drifted, or "".
func (c *Controller) driftReason(ctx context.Context, nodePool *v1.NodePool, nodeClaim *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	if hashDrifted(nodePool, nodeClaim) {
		return ReasonNodePoolDrifted, nil
	}
	if requirementsDrifted(nodePool, nodeClaim) {
		return ReasonRequirementsDrifted, nil
	}
	return c.cloud.IsDrifted(ctx, nodeClaim)
}

// hashDrifted reports whether the pool's template hash differs from the one the claim was made with. Hashes
// of different versions aren't comparable, and a missing annotation on either side says nothing.
func hashDrifted(nodePool *v1.NodePool, nodeClaim *v1.NodeClaim) bool {
	poolHash, ok1 := nodePool.Annotations[v1.NodePoolHashAnnotationKey]
	poolVersion, ok2 := nodePool.Annotations[v1.NodePoolHashVersionAnnotationKey]
	claimHash, ok3 := nodeClaim.Annotations[v1.NodePoolHashAnnotationKey]
	claimVersion, ok4 := nodeClaim.Annotations[v1.NodePoolHashVersionAnnotationKey]
	if !ok1 || !ok2 || !ok3 || !ok4 || poolVersion != claimVersion {
		return false
	}
	return poolHash != claimHash
}

// requirementsDrifted reports whether the claim's labels no longer satisfy the pool template's
// requirements. Requirements that don't parse can't be judged and aren't drift.
func requirementsDrifted(nodePool *v1.NodePool, nodeClaim *v1.NodeClaim) bool {
	poolRequirements, err := scheduling.FromNodePoolRequirements(nodePool.Spec.Template.Spec.Requirements)
	if err != nil {
		return false
	}
	return scheduling.FromLabels(nodeClaim.Labels).Compatible(poolRequirements, scheduling.CompatibilityOptions{}) != nil
}
