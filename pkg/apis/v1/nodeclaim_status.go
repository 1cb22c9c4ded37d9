package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim condition types, under Karpenter's names.
const (
	// ConditionTypeLaunched is True once the cloud provider has created the instance.
	ConditionTypeLaunched = "Launched"
	// ConditionTypeRegistered is True once a Node with the claim's provider ID has joined and been adopted.
	ConditionTypeRegistered = "Registered"
	// ConditionTypeInitialized is True once the node is Ready, its startup taints are gone and its extended
	// resources are registered.
	ConditionTypeInitialized = "Initialized"
	// ConditionTypeConsolidatable is True once consolidateAfter has passed since the last pod event.
	ConditionTypeConsolidatable = "Consolidatable"
	// ConditionTypeDrifted is True when the node no longer matches its NodePool or node class.
	ConditionTypeDrifted = "Drifted"
	// ConditionTypeDisruptionReason records why the claim is being disrupted.
	ConditionTypeDisruptionReason = "DisruptionReason"
	// ConditionTypeDrained is True once every evictable pod has left the node.
	ConditionTypeDrained = "Drained"
	// ConditionTypeVolumesDetached is True once the node's volume attachments are gone.
	ConditionTypeVolumesDetached = "VolumesDetached"
	// ConditionTypeInstanceTerminating is True once the instance's termination has begun.
	ConditionTypeInstanceTerminating = "InstanceTerminating"
	// ConditionTypeConsistentStateFound is False when the node differs from what was expected of it.
	ConditionTypeConsistentStateFound = "ConsistentStateFound"
)

// NodeClaimStatus is what Lathe observes of a NodeClaim and its node.
type NodeClaimStatus struct {
	// NodeName is the name of the claim's Node.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud provider's identifier of the instance.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID is the image the instance was launched from.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the node's estimated full capacity.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is the node's estimated capacity for pods.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Conditions of the claim; see the ConditionType constants.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastPodEventTime is the last time a pod was bound to or removed from the node; consolidateAfter counts
	// from it.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitempty"`
}
