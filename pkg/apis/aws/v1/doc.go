// Package v1 is the karpenter.k8s.aws/v1 API: EC2NodeClass, the AWS node class NodePools refer to.
//
// Field names, defaults and validation rules match Karpenter's AWS provider v1.14 so that EC2NodeClass
// manifests written for Karpenter apply to Lathe unchanged. Validation lives in kubebuilder markers that
// controller-gen turns into the CRD in pkg/apis/crds.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1
