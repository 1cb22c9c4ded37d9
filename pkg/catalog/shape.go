package catalog

import (
	"encoding/json"
	"slices"
	"sync"
)

// Shape is what an EC2 instance type is, neutral between its sources: the embedded records (one line of
// data/ec2-instance-types.json each) and the AWS provider's DescribeInstanceTypes answers. InstanceType turns
// a shape into a cloudprovider.InstanceType; ForNodeClass then shapes its capacity and overhead for a node
// class. Both the catalog and the AWS provider go through these two functions, so that they agree.
type Shape struct {
	Name                 string       `json:"name"`
	Family               string       `json:"family"`
	Category             string       `json:"category"`
	Generation           int          `json:"generation"`
	Size                 string       `json:"size"`
	VCPU                 int64        `json:"vcpu"`
	MemoryMiB            int64        `json:"memory_mib"`
	Architecture         string       `json:"architecture"`
	CPUManufacturer      string       `json:"cpu_manufacturer"`
	CPUSustainedClockMHz float64      `json:"cpu_sustained_clock_mhz"`
	Hypervisor           *string      `json:"hypervisor"`
	BareMetal            bool         `json:"bare_metal"`
	Flex                 bool         `json:"flex"`
	GPU                  *GPU         `json:"gpu"`
	Accelerator          *Accelerator `json:"accelerator"`
	LocalNVMeGiB         *int64       `json:"local_nvme_gib"`
	NetworkBandwidthMbps *int64       `json:"network_bandwidth_mbps"`
	EBSBandwidthMbps     *int64       `json:"ebs_bandwidth_mbps"`
	EncryptionInTransit  bool         `json:"encryption_in_transit"`
	// ENI are the network interface limits (nil when the data has none).
	ENI *ENI `json:"eni"`
	// MaxPods is the pod capacity nodes of the type have when the kubelet sets none: the ENI limit.
	MaxPods int64 `json:"max_pods"`
	// Allocatable is what Karpenter's generated reference states nodes of the type offer under the catalog's
	// assumptions (AL2023, default kubelet, no block device mappings); nil when nothing is recorded, and
	// then the overhead model alone decides.
	Allocatable       *Allocatable `json:"allocatable"`
	ExtendedResources Resources    `json:"extended_resources"`
}

// Allocatable is a recorded allocatable.
type Allocatable struct {
	CPUMillicores       int64 `json:"cpu_millicores"`
	MemoryMiB           int64 `json:"memory_mib"`
	EphemeralStorageGiB int64 `json:"ephemeral_storage_gib"`
	Pods                int64 `json:"pods"`
}

// GPU is a type's GPUs (all of one model).
type GPU struct {
	Count           int64  `json:"count"`
	Name            string `json:"name"`
	Manufacturer    string `json:"manufacturer"`
	MemoryMiBPerGPU int64  `json:"memory_mib_per_gpu"`
}

// Accelerator is a type's inference or training accelerators (Inferentia, Trainium, Qualcomm AI100).
type Accelerator struct {
	Count        int64  `json:"count"`
	Name         string `json:"name"`
	Manufacturer string `json:"manufacturer"`
}

// ENI are a type's network interface limits, as the VPC resource controller publishes them.
type ENI struct {
	MaxENIs            int64   `json:"max_enis"`
	IPv4PerENI         int64   `json:"ipv4_per_eni"`
	DefaultCardMaxENIs int64   `json:"default_card_max_enis"`
	NetworkCardMaxENIs []int64 `json:"network_card_max_enis"`
	TrunkingCompatible bool    `json:"trunking_compatible"`
	BranchENIs         int64   `json:"branch_enis"`
}

// Resources are a type's extended resources, sorted by name: a slice rather than the data's object, so
// that the generated records need no map built at run time.
type Resources []Resource

// Resource is one extended resource and how many a node of the type has.
type Resource struct {
	Name  string
	Count int64
}

// UnmarshalJSON reads the data's {"name": count} object.
func (r *Resources) UnmarshalJSON(data []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*r = nil
	for name, n := range m {
		*r = append(*r, Resource{Name: name, Count: n})
	}
	r.Sort()
	return nil
}

// Sort sorts the resources by name.
func (r Resources) Sort() {
	slices.SortFunc(r, func(a, b Resource) int { return compareStrings(a.Name, b.Name) })
}

// Count is how many of the named resource there are (0 when absent).
func (r Resources) Count(name string) int64 {
	for _, x := range r {
		if x.Name == name {
			return x.Count
		}
	}
	return 0
}

// EC2Shapes returns the embedded records, sorted by name. The shapes are copies; their pointers are shared
// and must not be written through.
func EC2Shapes() []Shape {
	out := slices.Clone(ec2Records)
	slices.SortFunc(out, func(a, b Shape) int { return compareStrings(a.Name, b.Name) })
	return out
}

// EC2Shape returns the embedded record of the named type.
func EC2Shape(name string) (Shape, bool) {
	i, ok := ec2RecordIndex()[name]
	if !ok {
		return Shape{}, false
	}
	return ec2Records[i], true
}

// ec2RecordIndex finds a record by name.
var ec2RecordIndex = sync.OnceValue(func() map[string]int {
	out := make(map[string]int, len(ec2Records))
	for i := range ec2Records {
		out[ec2Records[i].Name] = i
	}
	return out
})
