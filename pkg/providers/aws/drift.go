package aws

import (
	"context"
	"slices"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instance"
)

// Drift reasons (Karpenter's).
const (
	DriftAMI           cloudprovider.DriftReason = "AMIDrift"
	DriftSubnet        cloudprovider.DriftReason = "SubnetDrift"
	DriftSecurityGroup cloudprovider.DriftReason = "SecurityGroupDrift"
	DriftNodeClass     cloudprovider.DriftReason = "NodeClassDrift"
)

// IsDrifted compares the NodeClaim's node class hash with the node class's (same hash version only), then
// the instance's AMI, subnet and security groups with the node class's status.
func (c *CloudProvider) IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	nodeClass, err := c.nodeClass(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		return "", nil // the node class is gone or not ours: nothing to compare with
	}
	if staticDrift(nodeClaim, nodeClass) {
		return DriftNodeClass, nil
	}
	id, err := instance.ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return "", cloudprovider.NewNodeClaimNotFoundError(err)
	}
	in, err := c.instances.Get(ctx, id)
	if err != nil {
		return "", err
	}
	return instanceDrift(in, nodeClass), nil
}

func staticDrift(nodeClaim *v1.NodeClaim, nodeClass *awsv1.EC2NodeClass) bool {
	classHash, ok := nodeClass.Annotations[awsv1.AnnotationEC2NodeClassHash]
	claimHash, claimOK := nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHash]
	sameVersion := nodeClass.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]
	return ok && claimOK && sameVersion && classHash != claimHash
}

func instanceDrift(in *instance.Instance, nodeClass *awsv1.EC2NodeClass) cloudprovider.DriftReason {
	if len(nodeClass.Status.AMIs) > 0 && !slices.ContainsFunc(nodeClass.Status.AMIs, func(a awsv1.AMI) bool { return a.ID == in.ImageID }) {
		return DriftAMI
	}
	if len(nodeClass.Status.Subnets) > 0 && !slices.ContainsFunc(nodeClass.Status.Subnets, func(s awsv1.Subnet) bool { return s.ID == in.SubnetID }) {
		return DriftSubnet
	}
	want := securityGroupIDs(nodeClass)
	have := slices.Clone(in.SecurityGroupIDs)
	slices.Sort(want)
	slices.Sort(have)
	if len(want) > 0 && !slices.Equal(want, have) {
		return DriftSecurityGroup
	}
	return ""
}
