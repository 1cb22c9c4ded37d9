// Package nodeclass holds the AWS provider's EC2NodeClass controllers.
//
// Controller ("nodeclass.aws") resolves a node class against AWS and writes the answer to its status:
// subnets, security groups, AMIs with the requirements each serves, the instance profile (created for
// spec.role, or spec.instanceProfile as given) and capacity reservations, each with its condition
// (SubnetsReady, SecurityGroupsReady, AMIsReady, InstanceProfileReady, CapacityReservationsReady),
// then ValidationSucceeded and Ready over them. A condition that is False says what to fix ("no subnet
// matches tags karpenter.sh/discovery=demo"). It requeues on Karpenter's intervals (subnets and capacity
// reservations every minute, security groups and AMIs every five, a minute while nothing matches).
//
// Its finalizer, karpenter.k8s.aws/termination, waits until no NodeClaim uses the class, then deletes the
// instance profiles Lathe created for it (and runs the cleanups the launch side registers).
//
// HashController ("nodeclass.hash") keeps the karpenter.k8s.aws/ec2nodeclass-hash annotation (and its
// version) that drift compares, and re-stamps NodeClaims when the hash scheme changes.
package nodeclass
