package drift

import (
	"context"
	"fmt"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// Drift reasons found from the NodePool, as Karpenter names them.
const (
	ReasonNodePoolDrifted     cloudprovider.DriftReason = "NodePoolDrifted"
	ReasonRequirementsDrifted cloudprovider.DriftReason = "RequirementsDrifted"
	// ReasonInstanceTypeNotFound: the pool's instance types no longer include the claim's type, or none of
	// its offerings (available or not) matches the claim's zone and capacity type.
	ReasonInstanceTypeNotFound cloudprovider.DriftReason = "InstanceTypeNotFound"
)

// driftReason returns the first reason the claim drifted, or "".
func (c *Controller) driftReason(ctx context.Context, nodePool *v1.NodePool, nodeClaim *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	if hashDrifted(nodePool, nodeClaim) {
		return ReasonNodePoolDrifted, nil
	}
	if requirementsDrifted(nodePool, nodeClaim) {
		return ReasonRequirementsDrifted, nil
	}
	its, err := c.cloud.GetInstanceTypes(ctx, nodePool)
	if err != nil {
		return "", fmt.Errorf("listing the instance types of nodepool %q, %w", nodePool.Name, err)
	}
	if instanceTypeNotFound(its, nodeClaim) {
		return ReasonInstanceTypeNotFound, nil
	}
	return c.cloud.IsDrifted(ctx, nodeClaim)
}

// instanceTypeNotFound reports whether none of the instance types is the claim's with an offering its labels
// allow. Offerings the provider marks unavailable still count: only a type or offering that is gone drifts.
func instanceTypeNotFound(its []*cloudprovider.InstanceType, nodeClaim *v1.NodeClaim) bool {
	it := cloudprovider.InstanceTypes(its).Named(nodeClaim.Labels[v1.LabelInstanceType])
	return it == nil || len(it.Offerings.Compatible(scheduling.FromLabels(nodeClaim.Labels))) == 0
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
