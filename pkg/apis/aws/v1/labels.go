package v1

// Node labels the AWS provider adds to describe instance types, under Karpenter's names.
const (
	LabelNodeClass                            = Group + "/ec2nodeclass"
	LabelInstanceCategory                     = Group + "/instance-category"
	LabelInstanceFamily                       = Group + "/instance-family"
	LabelInstanceGeneration                   = Group + "/instance-generation"
	LabelInstanceSize                         = Group + "/instance-size"
	LabelInstanceCPU                          = Group + "/instance-cpu"
	LabelInstanceCPUManufacturer              = Group + "/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeedMhz    = Group + "/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                       = Group + "/instance-memory"
	LabelInstanceEBSBandwidth                 = Group + "/instance-ebs-bandwidth"
	LabelInstanceNetworkBandwidth             = Group + "/instance-network-bandwidth"
	LabelInstanceGPUName                      = Group + "/instance-gpu-name"
	LabelInstanceGPUManufacturer              = Group + "/instance-gpu-manufacturer"
	LabelInstanceGPUCount                     = Group + "/instance-gpu-count"
	LabelInstanceGPUMemory                    = Group + "/instance-gpu-memory"
	LabelInstanceAcceleratorName              = Group + "/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer      = Group + "/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount             = Group + "/instance-accelerator-count"
	LabelInstanceLocalNVME                    = Group + "/instance-local-nvme"
	LabelInstanceHypervisor                   = Group + "/instance-hypervisor"
	LabelInstanceEncryptionInTransitSupported = Group + "/instance-encryption-in-transit-supported"
	LabelInstanceCapabilityFlex               = Group + "/instance-capability-flex"
	LabelInstanceTenancy                      = Group + "/instance-tenancy"
	LabelCapacityReservationID                = Group + "/capacity-reservation-id"
	LabelCapacityReservationType              = Group + "/capacity-reservation-type"
	LabelCapacityReservationInterruptible     = Group + "/capacity-reservation-interruptible"
	LabelPlacementGroupID                     = Group + "/placement-group-id"
	LabelPlacementGroupPartition              = Group + "/placement-group-partition"
	LabelTopologyZoneID                       = "topology.k8s.aws/zone-id"
	AnnotationEC2NodeClassHash                = Group + "/ec2nodeclass-hash"
	AnnotationEC2NodeClassHashVersion         = Group + "/ec2nodeclass-hash-version"
	AnnotationInstanceTagged                  = Group + "/tagged"
	AnnotationInstanceProfileName             = Group + "/instance-profile-name"
)

// The AMI families an EC2NodeClass may use.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyCustom       = "Custom"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
)

// WellKnownLabels returns the label keys the AWS provider registers as well known: pods may select on them
// even when a NodePool doesn't mention them, and the instance types' values decide which types remain. The
// result is a new slice the caller may modify.
func WellKnownLabels() []string {
	return []string{
		LabelCapacityReservationID,
		LabelCapacityReservationType,
		LabelCapacityReservationInterruptible,
		LabelInstanceHypervisor,
		LabelInstanceEncryptionInTransitSupported,
		LabelInstanceCategory,
		LabelInstanceCapabilityFlex,
		LabelInstanceFamily,
		LabelInstanceGeneration,
		LabelInstanceSize,
		LabelInstanceLocalNVME,
		LabelInstanceCPU,
		LabelInstanceCPUManufacturer,
		LabelInstanceCPUSustainedClockSpeedMhz,
		LabelInstanceMemory,
		LabelInstanceEBSBandwidth,
		LabelInstanceNetworkBandwidth,
		LabelInstanceGPUName,
		LabelInstanceGPUManufacturer,
		LabelInstanceGPUCount,
		LabelInstanceGPUMemory,
		LabelInstanceAcceleratorName,
		LabelInstanceAcceleratorManufacturer,
		LabelInstanceAcceleratorCount,
		LabelTopologyZoneID,
		LabelInstanceTenancy,
		LabelPlacementGroupID,
		LabelPlacementGroupPartition,
	}
}
