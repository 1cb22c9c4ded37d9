package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

//go:generate go test -run TestEC2RecordsGenerated . -args -update

//go:embed data/ec2-prices.json
var ec2PricesJSON []byte

// EC2Options chooses what the EC2 catalog offers.
type EC2Options struct {
	// Region whose on-demand prices are used. Default us-east-1.
	Region string
	// Zones every type is offered in. Default us-east-1a, us-east-1b, us-east-1c. The data has no zones:
	// this is a simulation assumption.
	Zones []string
	// CapacityTypes to offer. Default on-demand and spot.
	CapacityTypes []string
	// SpotPriceFraction prices spot as this fraction of on-demand. Default 0.35. The data has no spot
	// prices: this is a simulation assumption, not an AWS fact.
	SpotPriceFraction float64
	// Categories keeps only these instance categories (for example "c", "m", "r"). Empty keeps all.
	Categories []string
}

func (o EC2Options) withDefaults() EC2Options {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if len(o.Zones) == 0 {
		o.Zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	}
	if len(o.CapacityTypes) == 0 {
		o.CapacityTypes = []string{v1.CapacityTypeOnDemand, v1.CapacityTypeSpot}
	}
	if o.SpotPriceFraction == 0 {
		o.SpotPriceFraction = 0.35
	}
	return o
}

// ec2Record is one line of ec2-instance-types.json.
type ec2Record struct {
	Name                 string          `json:"name"`
	Family               string          `json:"family"`
	Category             string          `json:"category"`
	Generation           int             `json:"generation"`
	Size                 string          `json:"size"`
	VCPU                 int64           `json:"vcpu"`
	MemoryMiB            int64           `json:"memory_mib"`
	Architecture         string          `json:"architecture"`
	CPUManufacturer      string          `json:"cpu_manufacturer"`
	CPUSustainedClockMHz float64         `json:"cpu_sustained_clock_mhz"`
	Hypervisor           *string         `json:"hypervisor"`
	Flex                 bool            `json:"flex"`
	GPU                  *ec2GPU         `json:"gpu"`
	Accelerator          *ec2Accelerator `json:"accelerator"`
	LocalNVMeGiB         *int64          `json:"local_nvme_gib"`
	NetworkBandwidthMbps *int64          `json:"network_bandwidth_mbps"`
	EBSBandwidthMbps     *int64          `json:"ebs_bandwidth_mbps"`
	EncryptionInTransit  bool            `json:"encryption_in_transit"`
	MaxPods              int64           `json:"max_pods"`
	Allocatable          ec2Allocatable  `json:"allocatable"`
	ExtendedResources    ec2Resources    `json:"extended_resources"`
}

type ec2Allocatable struct {
	CPUMillicores       int64 `json:"cpu_millicores"`
	MemoryMiB           int64 `json:"memory_mib"`
	EphemeralStorageGiB int64 `json:"ephemeral_storage_gib"`
	Pods                int64 `json:"pods"`
}

type ec2GPU struct {
	Count           int64  `json:"count"`
	Name            string `json:"name"`
	Manufacturer    string `json:"manufacturer"`
	MemoryMiBPerGPU int64  `json:"memory_mib_per_gpu"`
}

type ec2Accelerator struct {
	Count        int64  `json:"count"`
	Name         string `json:"name"`
	Manufacturer string `json:"manufacturer"`
}

// ec2Resources are a type's extended resources, sorted by name: a slice rather than the data's object, so
// that the generated records need no map built at run time.
type ec2Resources []ec2Resource

type ec2Resource struct {
	Name  string
	Count int64
}

// UnmarshalJSON reads the data's {"name": count} object.
func (r *ec2Resources) UnmarshalJSON(data []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*r = nil
	for name, n := range m {
		*r = append(*r, ec2Resource{Name: name, Count: n})
	}
	slices.SortFunc(*r, func(a, b ec2Resource) int { return compareStrings(a.Name, b.Name) })
	return nil
}

// ec2RootVolumeGiB is the default root volume Karpenter assumes (AL2023, no blockDeviceMappings); the data's
// allocatable ephemeral storage is what is left after the eviction threshold.
const ec2RootVolumeGiB = 20

// EC2 returns the embedded EC2 catalog, sorted by name. Each type's allocatable equals the data's
// allocatable field: capacity is the raw vCPUs, MiB, max pods and a 20 GiB root volume, and the difference
// is reported as kube-reserved (cpu, memory) and eviction threshold (ephemeral storage).
func EC2(opts EC2Options) (cloudprovider.InstanceTypes, error) {
	opts = opts.withDefaults()
	var prices struct {
		Regions map[string]struct {
			OnDemandHourly map[string]float64 `json:"on_demand_hourly"`
		} `json:"regions"`
	}
	if err := json.Unmarshal(ec2PricesJSON, &prices); err != nil {
		return nil, fmt.Errorf("decoding embedded prices, %w", err)
	}
	region, ok := prices.Regions[opts.Region]
	if !ok {
		return nil, fmt.Errorf("no prices for region %q", opts.Region)
	}
	var out cloudprovider.InstanceTypes
	for i := range ec2Records {
		rec := &ec2Records[i]
		if len(opts.Categories) > 0 && !slices.Contains(opts.Categories, rec.Category) {
			continue
		}
		out = append(out, ec2InstanceType(rec, region.OnDemandHourly, opts))
	}
	slices.SortFunc(out, func(a, b *cloudprovider.InstanceType) int { return compareStrings(a.Name, b.Name) })
	return out, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func ec2InstanceType(rec *ec2Record, onDemand map[string]float64, opts EC2Options) *cloudprovider.InstanceType {
	var offerings cloudprovider.Offerings
	if price, ok := onDemand[rec.Name]; ok {
		for _, zone := range opts.Zones {
			for _, ct := range opts.CapacityTypes {
				p := price
				if ct == v1.CapacityTypeSpot {
					p = price * opts.SpotPriceFraction
				}
				offerings = append(offerings, cloudprovider.Offering{Zone: zone, CapacityType: ct, Price: p, Available: true})
			}
		}
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(rec.VCPU, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(rec.MemoryMiB*mebibyte, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(rec.MaxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(ec2RootVolumeGiB*gibibyte, resource.BinarySI),
	}
	for _, r := range rec.ExtendedResources {
		capacity[corev1.ResourceName(r.Name)] = *resource.NewQuantity(r.Count, resource.DecimalSI)
	}
	overhead := cloudprovider.InstanceTypeOverhead{
		KubeReserved: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(rec.VCPU*1000-rec.Allocatable.CPUMillicores, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity((rec.MemoryMiB-rec.Allocatable.MemoryMiB)*mebibyte, resource.BinarySI),
		},
		EvictionThreshold: corev1.ResourceList{
			corev1.ResourceEphemeralStorage: *resource.NewQuantity((ec2RootVolumeGiB-rec.Allocatable.EphemeralStorageGiB)*gibibyte, resource.BinarySI),
		},
	}
	if rec.Allocatable.Pods != rec.MaxPods {
		overhead.KubeReserved[corev1.ResourcePods] = *resource.NewQuantity(rec.MaxPods-rec.Allocatable.Pods, resource.DecimalSI)
	}
	return &cloudprovider.InstanceType{
		Name:         rec.Name,
		Requirements: withOfferingRequirements(ec2Requirements(ec2Labels(rec, opts.Region)), offerings),
		Offerings:    offerings,
		Capacity:     capacity,
		Overhead:     overhead,
	}
}

const (
	mebibyte = 1 << 20
	gibibyte = 1 << 30
)

// ec2Label is one label of a type.
type ec2Label struct{ key, value string }

// ec2Labels returns every label the record supports, under Karpenter's names and value formats (a list: a
// map per type would only be read once).
func ec2Labels(rec *ec2Record, region string) []ec2Label {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	labels := make([]ec2Label, 0, 13+len(optionalEC2Labels))
	labels = append(labels,
		ec2Label{v1.LabelInstanceType, rec.Name},
		ec2Label{v1.LabelArch, rec.Architecture},
		ec2Label{v1.LabelOS, "linux"},
		ec2Label{v1.LabelTopologyRegion, region},
		ec2Label{awsv1.LabelInstanceCategory, rec.Category},
		ec2Label{awsv1.LabelInstanceFamily, rec.Family},
		ec2Label{awsv1.LabelInstanceGeneration, strconv.Itoa(rec.Generation)},
		ec2Label{awsv1.LabelInstanceSize, rec.Size},
		ec2Label{awsv1.LabelInstanceCPU, itoa(rec.VCPU)},
		ec2Label{awsv1.LabelInstanceMemory, itoa(rec.MemoryMiB)},
		ec2Label{awsv1.LabelInstanceEncryptionInTransitSupported, strconv.FormatBool(rec.EncryptionInTransit)},
		ec2Label{awsv1.LabelInstanceCapabilityFlex, strconv.FormatBool(rec.Flex)},
		ec2Label{awsv1.LabelInstanceTenancy, "default"},
	)
	if rec.CPUManufacturer != "" {
		labels = append(labels, ec2Label{awsv1.LabelInstanceCPUManufacturer, rec.CPUManufacturer})
	}
	if rec.CPUSustainedClockMHz > 0 {
		labels = append(labels, ec2Label{awsv1.LabelInstanceCPUSustainedClockSpeedMhz, strconv.FormatFloat(rec.CPUSustainedClockMHz, 'f', -1, 64)})
	}
	if rec.Hypervisor != nil && *rec.Hypervisor != "" {
		labels = append(labels, ec2Label{awsv1.LabelInstanceHypervisor, *rec.Hypervisor})
	}
	if rec.NetworkBandwidthMbps != nil {
		labels = append(labels, ec2Label{awsv1.LabelInstanceNetworkBandwidth, itoa(*rec.NetworkBandwidthMbps)})
	}
	if rec.EBSBandwidthMbps != nil {
		labels = append(labels, ec2Label{awsv1.LabelInstanceEBSBandwidth, itoa(*rec.EBSBandwidthMbps)})
	}
	if rec.LocalNVMeGiB != nil {
		labels = append(labels, ec2Label{awsv1.LabelInstanceLocalNVME, itoa(*rec.LocalNVMeGiB)})
	}
	if g := rec.GPU; g != nil {
		labels = append(labels,
			ec2Label{awsv1.LabelInstanceGPUName, g.Name},
			ec2Label{awsv1.LabelInstanceGPUManufacturer, g.Manufacturer},
			ec2Label{awsv1.LabelInstanceGPUCount, itoa(g.Count)},
			ec2Label{awsv1.LabelInstanceGPUMemory, itoa(g.MemoryMiBPerGPU)},
		)
	}
	if a := rec.Accelerator; a != nil {
		labels = append(labels,
			ec2Label{awsv1.LabelInstanceAcceleratorName, a.Name},
			ec2Label{awsv1.LabelInstanceAcceleratorManufacturer, a.Manufacturer},
			ec2Label{awsv1.LabelInstanceAcceleratorCount, itoa(a.Count)},
		)
	}
	return labels
}

// ec2Requirements pins every label to its value and says that the optional AWS labels a type lacks (GPU,
// accelerator, local NVMe, bandwidths, reservation) are absent, as the AWS provider does: a pod selecting
// karpenter.k8s.aws/instance-gpu-count then rules out the types without GPUs instead of matching them.
func ec2Requirements(labels []ec2Label) scheduling.Requirements {
	// Sized for every label, the absent ones and the two offering requirements, so the map never grows.
	reqs := make(scheduling.Requirements, len(labels)+len(optionalEC2Labels)+2)
	for _, l := range labels {
		reqs.Add(scheduling.MustRequirement(l.key, corev1.NodeSelectorOpIn, l.value))
	}
	for i, k := range optionalEC2Labels {
		if _, ok := reqs[k]; !ok {
			reqs.Add(absentEC2Labels[i])
		}
	}
	return reqs
}

// optionalEC2Labels are the labels only some types have.
var optionalEC2Labels = []string{
	v1.LabelWindowsBuild,
	awsv1.LabelInstanceCPUManufacturer, awsv1.LabelInstanceCPUSustainedClockSpeedMhz,
	awsv1.LabelInstanceEBSBandwidth, awsv1.LabelInstanceNetworkBandwidth, awsv1.LabelInstanceLocalNVME,
	awsv1.LabelInstanceGPUName, awsv1.LabelInstanceGPUManufacturer, awsv1.LabelInstanceGPUCount, awsv1.LabelInstanceGPUMemory,
	awsv1.LabelInstanceAcceleratorName, awsv1.LabelInstanceAcceleratorManufacturer, awsv1.LabelInstanceAcceleratorCount,
	awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType, awsv1.LabelCapacityReservationInterruptible,
}

// absentEC2Labels says "does not exist" for each optional label, built once (requirements are values and
// are never modified in place).
var absentEC2Labels = func() []scheduling.Requirement {
	out := make([]scheduling.Requirement, len(optionalEC2Labels))
	for i, k := range optionalEC2Labels {
		out[i] = scheduling.MustRequirement(k, corev1.NodeSelectorOpDoesNotExist)
	}
	return out
}()

// withOfferingRequirements adds zone and capacity-type requirements listing what the offerings cover.
func withOfferingRequirements(reqs scheduling.Requirements, offerings cloudprovider.Offerings) scheduling.Requirements {
	var zones, capacityTypes []string
	for _, o := range offerings {
		zones = append(zones, o.Zone)
		capacityTypes = append(capacityTypes, o.CapacityType)
	}
	reqs.Add(scheduling.MustRequirement(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...))
	reqs.Add(scheduling.MustRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacityTypes...))
	return reqs
}
