package convert

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The types below model the alpha APIs only as far as conversion reads them. Field names and JSON tags are
// those of karpenter.sh/v1alpha5 and karpenter.k8s.aws/v1alpha1 (Karpenter v0.31), so decoding a manifest
// strictly into them rejects fields those APIs never had.

// provisionerSpec is a v1alpha5 Provisioner's spec.
type provisionerSpec struct {
	Annotations            map[string]string                `json:"annotations,omitempty"`
	Labels                 map[string]string                `json:"labels,omitempty"`
	Taints                 []corev1.Taint                   `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint                   `json:"startupTaints,omitempty"`
	Requirements           []corev1.NodeSelectorRequirement `json:"requirements,omitempty"`
	KubeletConfiguration   *kubeletConfiguration            `json:"kubeletConfiguration,omitempty"`
	Provider               json.RawMessage                  `json:"provider,omitempty"`
	ProviderRef            *providerRef                     `json:"providerRef,omitempty"`
	TTLSecondsAfterEmpty   *int64                           `json:"ttlSecondsAfterEmpty,omitempty"`
	TTLSecondsUntilExpired *int64                           `json:"ttlSecondsUntilExpired,omitempty"`
	Limits                 *struct {
		Resources corev1.ResourceList `json:"resources,omitempty"`
	} `json:"limits,omitempty"`
	Weight        *int32 `json:"weight,omitempty"`
	Consolidation *struct {
		Enabled *bool `json:"enabled,omitempty"`
	} `json:"consolidation,omitempty"`
}

// providerRef is a v1alpha5 Provisioner's spec.providerRef.
type providerRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name"`
}

// awsProvider holds the fields a v1alpha5 Provisioner's inline spec.provider and a v1alpha1 AWSNodeTemplate's
// spec share (v1alpha1's AWS struct, with its inlined LaunchTemplate).
type awsProvider struct {
	APIVersion            string                `json:"apiVersion,omitempty"`
	Kind                  string                `json:"kind,omitempty"`
	AMIFamily             *string               `json:"amiFamily,omitempty"`
	Context               *string               `json:"context,omitempty"`
	InstanceProfile       *string               `json:"instanceProfile,omitempty"`
	SubnetSelector        map[string]string     `json:"subnetSelector,omitempty"`
	SecurityGroupSelector map[string]string     `json:"securityGroupSelector,omitempty"`
	Tags                  map[string]string     `json:"tags,omitempty"`
	LaunchTemplateName    *string               `json:"launchTemplate,omitempty"`
	MetadataOptions       *metadataOptions      `json:"metadataOptions,omitempty"`
	BlockDeviceMappings   []*blockDeviceMapping `json:"blockDeviceMappings,omitempty"`
}

// awsNodeTemplateSpec is a v1alpha1 AWSNodeTemplate's spec.
type awsNodeTemplateSpec struct {
	awsProvider        `json:",inline"`
	UserData           *string           `json:"userData,omitempty"`
	AMISelector        map[string]string `json:"amiSelector,omitempty"`
	DetailedMonitoring *bool             `json:"detailedMonitoring,omitempty"`
}

// kubeletConfiguration is the kubelet block of v1alpha5 (kubeletConfiguration) and v1beta1 (kubelet). Resource
// maps are kept as text: v1alpha5 typed systemReserved and kubeReserved as quantities, so numbers occur.
type kubeletConfiguration struct {
	ClusterDNS                  []string `json:"clusterDNS,omitempty"`
	ContainerRuntime            *string  `json:"containerRuntime,omitempty"`
	MaxPods                     *int32   `json:"maxPods,omitempty"`
	PodsPerCore                 *int32   `json:"podsPerCore,omitempty"`
	SystemReserved              textMap  `json:"systemReserved,omitempty"`
	KubeReserved                textMap  `json:"kubeReserved,omitempty"`
	EvictionHard                textMap  `json:"evictionHard,omitempty"`
	EvictionSoft                textMap  `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod     textMap  `json:"evictionSoftGracePeriod,omitempty"`
	EvictionMaxPodGracePeriod   *int32   `json:"evictionMaxPodGracePeriod,omitempty"`
	ImageGCHighThresholdPercent *int32   `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent  *int32   `json:"imageGCLowThresholdPercent,omitempty"`
	CPUCFSQuota                 *bool    `json:"cpuCFSQuota,omitempty"`
}

// metadataOptions is the IMDS block of v1alpha1 and v1beta1.
type metadataOptions struct {
	HTTPEndpoint            *string `json:"httpEndpoint,omitempty"`
	HTTPProtocolIPv6        *string `json:"httpProtocolIPv6,omitempty"`
	HTTPPutResponseHopLimit *int64  `json:"httpPutResponseHopLimit,omitempty"`
	HTTPTokens              *string `json:"httpTokens,omitempty"`
}

// blockDeviceMapping is a block device mapping of v1alpha1 and v1beta1 (rootVolume is v1beta1 only).
type blockDeviceMapping struct {
	DeviceName *string      `json:"deviceName,omitempty"`
	EBS        *blockDevice `json:"ebs,omitempty"`
	RootVolume bool         `json:"rootVolume,omitempty"`
}

// blockDevice is an EBS volume of v1alpha1 and v1beta1.
type blockDevice struct {
	DeleteOnTermination *bool              `json:"deleteOnTermination,omitempty"`
	Encrypted           *bool              `json:"encrypted,omitempty"`
	IOPS                *int64             `json:"iops,omitempty"`
	KMSKeyID            *string            `json:"kmsKeyID,omitempty"`
	SnapshotID          *string            `json:"snapshotID,omitempty"`
	Throughput          *int64             `json:"throughput,omitempty"`
	VolumeSize          *resource.Quantity `json:"volumeSize,omitempty"`
	VolumeType          *string            `json:"volumeType,omitempty"`
}
