// Package v1 is the karpenter.sh/v1 API that Lathe serves: NodePool and NodeClaim.
//
// The types, field names, defaults and validation rules match Karpenter v1.14 so that manifests written for
// Karpenter apply to Lathe unchanged. Validation lives in kubebuilder markers (OpenAPI and CEL) that
// controller-gen turns into the CRDs in pkg/apis/crds; the API server enforces them, so no webhook is needed.
//
// Nothing here registers into a global scheme: callers add the types with AddToScheme.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1
