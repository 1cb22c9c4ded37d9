// Package aws is Lathe's AWS cloud provider: it launches NodeClaims as EC2 instances with aws-sdk-go-v2,
// exactly as it runs on EKS, composing the launch template provider (package launchtemplate), the instance
// provider (package instance, CreateFleet) and the unavailable-offerings cache (package unavailable).
//
// # Launch
//
// Create reads the NodeClaim's EC2NodeClass (it must be Ready; its status holds the resolved subnets,
// security groups, AMIs and instance profile), picks the instance types the NodeClaim allows, cheapest
// first and at most 60, chooses spot when the NodeClaim allows it and a spot offering is available (else
// on-demand), renders the node's user data, ensures one launch template per AMI and launches one instant
// CreateFleet over the types × one subnet per allowed zone. The instance, its volumes and network
// interfaces are tagged karpenter.sh/nodepool, karpenter.sh/nodeclaim, karpenter.k8s.aws/ec2nodeclass,
// kubernetes.io/cluster/<cluster>: owned, eks:eks-cluster-name and the node class's tags.
//
// # Instances and NodeClaims
//
// Provider IDs are aws:///<zone>/<instance-id>. List returns every live instance tagged for the cluster
// with a nodepool tag (what garbage collection reads); Get and Delete report a terminated instance as
// NodeClaimNotFound. IsDrifted compares the instance's AMI, subnet and security groups with the node
// class's status, and the node class hash annotation on the NodeClaim with the node class's.
package aws
