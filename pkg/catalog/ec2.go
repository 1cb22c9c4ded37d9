package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"

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

// ec2RootVolumeGiB is the default root volume Karpenter assumes (AL2023, no blockDeviceMappings); the data's
// allocatable ephemeral storage is what is left after the eviction threshold.
const ec2RootVolumeGiB = 20

// EC2 returns the embedded EC2 catalog, sorted by name. Each type's allocatable equals the data's
// allocatable field: capacity is the raw vCPUs, MiB, max pods and a 20 GiB root volume, and the difference
// is reported as kube-reserved (cpu, memory) and eviction threshold (ephemeral storage).
func EC2(opts EC2Options) (cloudprovider.InstanceTypes, error) {
	opts = opts.withDefaults()
	onDemand, err := OnDemandPrices(opts.Region)
	if err != nil {
		return nil, err
	}
	var out cloudprovider.InstanceTypes
	for i := range ec2Records {
		rec := &ec2Records[i]
		if len(opts.Categories) > 0 && !slices.Contains(opts.Categories, rec.Category) {
			continue
		}
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
		out = append(out, InstanceType(rec, opts.Region, offerings))
	}
	slices.SortFunc(out, func(a, b *cloudprovider.InstanceType) int { return compareStrings(a.Name, b.Name) })
	return out, nil
}

// OnDemandPrices returns the embedded on-demand prices of the region (type → hourly price), shared by
// every caller: don't modify it.
func OnDemandPrices(region string) (map[string]float64, error) {
	prices, err := ec2Prices()
	if err != nil {
		return nil, err
	}
	p, ok := prices[region]
	if !ok {
		return nil, fmt.Errorf("no prices for region %q", region)
	}
	return p, nil
}

// DefaultSpotPriceFraction is the catalog's spot price model: spot costs this fraction of on-demand (a
// simulation assumption; the data has no spot prices).
const DefaultSpotPriceFraction = 0.35

// ec2Prices decodes the embedded prices once: region → type → on-demand hourly price.
var ec2Prices = sync.OnceValues(func() (map[string]map[string]float64, error) {
	var prices struct {
		Regions map[string]struct {
			OnDemandHourly map[string]float64 `json:"on_demand_hourly"`
		} `json:"regions"`
	}
	if err := json.Unmarshal(ec2PricesJSON, &prices); err != nil {
		return nil, fmt.Errorf("decoding embedded prices, %w", err)
	}
	out := make(map[string]map[string]float64, len(prices.Regions))
	for region, p := range prices.Regions {
		out[region] = p.OnDemandHourly
	}
	return out, nil
})

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// InstanceType is the one place a shape becomes an instance type, for the embedded catalog and the AWS
// provider alike: every karpenter.k8s.aws label, capacity (vCPUs, memory, max pods, the default 20 GiB root
// volume, extended resources) and the overhead nodes of the type have under the catalog's assumptions
// (AL2023, default kubelet): the recorded allocatable's difference when the shape has one, else the
// overhead model's. Zone and capacity-type requirements list what the offerings cover. ForNodeClass then
// fits capacity and overhead to a node class.
func InstanceType(s *Shape, region string, offerings cloudprovider.Offerings) *cloudprovider.InstanceType {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(s.VCPU, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(s.MemoryMiB*mebibyte, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(s.MaxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(ec2RootVolumeGiB*gibibyte, resource.BinarySI),
	}
	for _, r := range s.ExtendedResources {
		capacity[corev1.ResourceName(r.Name)] = *resource.NewQuantity(r.Count, resource.DecimalSI)
	}
	it := &cloudprovider.InstanceType{
		Name:         s.Name,
		Requirements: withOfferingRequirements(ec2Requirements(ec2Labels(s, region)), offerings),
		Offerings:    offerings,
		Capacity:     capacity,
	}
	a := s.Allocatable
	if a == nil {
		it.Overhead = catalogSettings.model(it).Overhead
		return it
	}
	it.Overhead = cloudprovider.InstanceTypeOverhead{
		KubeReserved: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(s.VCPU*1000-a.CPUMillicores, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity((s.MemoryMiB-a.MemoryMiB)*mebibyte, resource.BinarySI),
		},
		EvictionThreshold: corev1.ResourceList{
			corev1.ResourceEphemeralStorage: *resource.NewQuantity((ec2RootVolumeGiB-a.EphemeralStorageGiB)*gibibyte, resource.BinarySI),
		},
	}
	if a.Pods != s.MaxPods {
		it.Overhead.KubeReserved[corev1.ResourcePods] = *resource.NewQuantity(s.MaxPods-a.Pods, resource.DecimalSI)
	}
	return it
}

const (
	mebibyte = 1 << 20
	gibibyte = 1 << 30
)

// ec2Label is one label of a type.
type ec2Label struct{ key, value string }

// ec2Labels returns every label the record supports, under Karpenter's names and value formats (a list: a
// map per type would only be read once).
func ec2Labels(rec *Shape, region string) []ec2Label {
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
	// The keys are Karpenter's and AWS's label names, already normalised; the values share one backing
	// array (TestEC2RequirementsAsNewRequirement).
	values := make([]string, len(labels))
	for i, l := range labels {
		values[i] = l.value
		reqs.Add(scheduling.NewSortedIn(l.key, values[i:i+1:i+1]))
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
