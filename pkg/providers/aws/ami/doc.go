// Package ami resolves an EC2NodeClass's amiSelectorTerms to images and the instance requirements each
// serves, as Karpenter does.
//
// An alias term (family@version) reads the public SSM parameters of the EKS-optimized images for the
// cluster's Kubernetes version, one per architecture and accelerator variant (standard, nvidia, neuron), and
// knows from the path which instances each image serves. Other terms query DescribeImages: all id and
// ssmParameter terms together, each name/owner/tags term alone (a name term looks only at images of "self"
// and "amazon" unless it names an owner). For every requirement set (architecture plus variant) the newest
// non-deprecated image wins; a deprecated one only when nothing else serves it.
//
// SSM values are cached for 24 hours (5 minutes for a term's own ssmParameter), resolved images for a minute;
// InvalidationController forgets, every 30 minutes, the cached "latest"/"recommended" values whose image has
// become deprecated.
package ami
