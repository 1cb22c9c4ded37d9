package v1

import corev1 "k8s.io/api/core/v1"

// NodeSelectorRequirementWithMinValues is a node selector requirement that may also ask for a minimum number of
// distinct values (for example at least 5 instance families) among the instance types a NodeClaim may launch.
type NodeSelectorRequirementWithMinValues struct {
	// Key is the label key the requirement applies to.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +kubebuilder:validation:XValidation:message=`label domain "karpenter.sh" is restricted`,rule=`self in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || !self.find("^([^/]+)").endsWith("karpenter.sh")`
	// +kubebuilder:validation:XValidation:message=`label "kubernetes.io/hostname" is restricted`,rule=`self != "kubernetes.io/hostname"`
	// +kubebuilder:validation:XValidation:message=`label domain "karpenter.k8s.aws" is restricted`,rule=`self in ["karpenter.k8s.aws/instance-tenancy", "karpenter.k8s.aws/capacity-reservation-type", "karpenter.k8s.aws/capacity-reservation-id", "karpenter.k8s.aws/capacity-reservation-interruptible", "karpenter.k8s.aws/ec2nodeclass", "karpenter.k8s.aws/instance-encryption-in-transit-supported", "karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-hypervisor", "karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-generation", "karpenter.k8s.aws/instance-local-nvme", "karpenter.k8s.aws/instance-size", "karpenter.k8s.aws/instance-cpu", "karpenter.k8s.aws/instance-cpu-manufacturer", "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz", "karpenter.k8s.aws/instance-memory", "karpenter.k8s.aws/instance-ebs-bandwidth", "karpenter.k8s.aws/instance-network-bandwidth", "karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-manufacturer", "karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-gpu-memory", "karpenter.k8s.aws/instance-accelerator-name", "karpenter.k8s.aws/instance-accelerator-manufacturer", "karpenter.k8s.aws/instance-accelerator-count", "karpenter.k8s.aws/instance-capability-flex", "karpenter.k8s.aws/placement-group-id", "karpenter.k8s.aws/placement-group-partition"] || !self.find("^([^/]+)").endsWith("karpenter.k8s.aws")`
	Key string `json:"key"`
	// Operator relates the key to the values: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte.
	// +kubebuilder:validation:Enum:={In,NotIn,Exists,DoesNotExist,Gt,Lt,Gte,Lte}
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values for In and NotIn (any number), Gt, Lt, Gte and Lte (one non-negative integer); empty for Exists
	// and DoesNotExist. (hack/crdpatch puts Karpenter's label-value length and pattern on the list itself, where
	// Karpenter's CRD has them and where they constrain nothing.)
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
	// MinValues is the minimum number of distinct values of this key that the instance types a NodeClaim may
	// launch must cover.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// Operators Karpenter added to the core node selector operators.
const (
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)

// NodeClassReference names the provider-specific node class a NodeClaim launches with.
type NodeClassReference struct {
	// Kind of the referent, for example EC2NodeClass.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="kind may not be empty"
	// +required
	Kind string `json:"kind"`
	// Name of the referent.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="name may not be empty"
	// +required
	Name string `json:"name"`
	// Group of the referent, for example karpenter.k8s.aws.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="group may not be empty"
	// +kubebuilder:validation:Pattern:=`^[^/]*$`
	// +required
	Group string `json:"group"`
}
