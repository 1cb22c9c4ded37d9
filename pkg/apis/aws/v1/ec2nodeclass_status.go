package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EC2NodeClass condition types.
const (
	ConditionTypeSubnetsReady              = "SubnetsReady"
	ConditionTypeSecurityGroupsReady       = "SecurityGroupsReady"
	ConditionTypeAMIsReady                 = "AMIsReady"
	ConditionTypeInstanceProfileReady      = "InstanceProfileReady"
	ConditionTypeCapacityReservationsReady = "CapacityReservationsReady"
	ConditionTypePlacementGroupReady       = "PlacementGroupReady"
	ConditionTypeValidationSucceeded       = "ValidationSucceeded"
	ConditionTypeReady                     = "Ready"
)

// EC2NodeClassStatus is what Lathe resolved the node class's selectors to.
type EC2NodeClassStatus struct {
	// Subnets the selector terms resolved to.
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// SecurityGroups the selector terms resolved to.
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// CapacityReservations the selector terms resolved to.
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
	// AMIs the selector terms resolved to, with the requirements each one serves.
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
	// InstanceProfile is the instance profile nodes launch with.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// PlacementGroups the selector resolved to.
	// +optional
	PlacementGroups []PlacementGroup `json:"placementGroups,omitempty"`
	// Conditions of the node class; Ready summarises them.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subnet is a resolved subnet.
type Subnet struct {
	// ID of the subnet.
	// +required
	ID string `json:"id"`
	// Zone of the subnet.
	// +required
	Zone string `json:"zone"`
	// ZoneID of the subnet.
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a resolved security group.
type SecurityGroup struct {
	// ID of the security group.
	// +required
	ID string `json:"id"`
	// Name of the security group.
	// +optional
	Name string `json:"name,omitempty"`
}

// AMI is a resolved image.
type AMI struct {
	// ID of the image.
	// +required
	ID string `json:"id"`
	// Name of the image.
	// +optional
	Name string `json:"name,omitempty"`
	// Requirements an instance type must meet to boot this image (for example its architecture).
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
	// Deprecated is true when the image is past its deprecation time.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
}

// CapacityReservation is a resolved capacity reservation.
type CapacityReservation struct {
	// AvailabilityZone of the reservation.
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// EndTime of the reservation, if it ends.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// ID of the reservation.
	// +kubebuilder:validation:Pattern:="^cr-[0-9a-z]+$"
	// +required
	ID string `json:"id"`
	// InstanceMatchCriteria of the reservation.
	// +kubebuilder:validation:Enum:={open,targeted}
	// +required
	InstanceMatchCriteria string `json:"instanceMatchCriteria"`
	// InstanceType the reservation holds.
	// +required
	InstanceType string `json:"instanceType"`
	// Interruptible is true for interruptible reservations.
	// +optional
	Interruptible bool `json:"interruptible,omitempty"`
	// OwnerID is the account that owns the reservation.
	// +kubebuilder:validation:Pattern:="^[0-9]{12}$"
	// +required
	OwnerID string `json:"ownerID"`
	// ReservationType is "default" or "capacity-block".
	// +kubebuilder:validation:Enum:={default,capacity-block}
	// +kubebuilder:default=default
	// +optional
	ReservationType string `json:"reservationType,omitempty"`
	// State is "active" or "expiring".
	// +kubebuilder:validation:Enum:={active,expiring}
	// +kubebuilder:default=active
	// +optional
	State string `json:"state,omitempty"`
}

// PlacementGroup is a resolved placement group.
type PlacementGroup struct {
	// ID of the placement group.
	// +required
	ID string `json:"id"`
	// Name of the placement group.
	// +optional
	Name string `json:"name,omitempty"`
	// Strategy of the placement group: cluster, partition or spread.
	// +optional
	Strategy string `json:"strategy,omitempty"`
	// PartitionCount of a partition placement group.
	// +optional
	PartitionCount int32 `json:"partitionCount,omitempty"`
}
