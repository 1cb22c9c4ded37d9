// Package convert turns Karpenter manifests written for the older APIs into the v1 APIs Lathe serves:
// v1alpha5 Provisioners and v1alpha1 AWSNodeTemplates (Karpenter up to v0.31) and v1beta1 NodePools and
// EC2NodeClasses (v0.32 to v0.37) become karpenter.sh/v1 NodePools and karpenter.k8s.aws/v1 EC2NodeClasses.
//
// The mapping follows upstream: the alpha objects go to v1beta1 as the karpenter-convert tool of Karpenter
// v0.32 did, and v1beta1 goes to v1 as Karpenter v1.0's conversion webhooks do, with the changes a manifest
// needs that a webhook could defer (the kubelet block moves from the NodePool to the EC2NodeClass it names).
//
// Convert works on a whole set of documents at once, because a pool's kubelet settings land on another
// document. It either converts everything or returns every problem it found, each naming the document and
// the field; Run is the command-line front end of cmd/karpenter-convert.
package convert
