package fakeaws

import (
	"strconv"
	"strings"

	"github.com/lathe-autoscaler/lathe/pkg/catalog"
)

// instanceTypeState is the region's instance types, seeded from the embedded catalog, and where each is
// offered: by default every type in every zone of the fake.
type instanceTypeState struct {
	types []catalog.Shape // sorted by name
	// infos are the types as DescribeInstanceTypes describes them, in the same order.
	infos []instanceTypeInfo
	// withdrawn are the offerings RemoveOffering took away: instance type → zone.
	withdrawn map[string]map[string]bool
}

func init() {
	seeders = append(seeders, seedInstanceTypes)
	handleEC2("DescribeInstanceTypes", (*Server).describeInstanceTypes)
	handleEC2("DescribeInstanceTypeOfferings", (*Server).describeInstanceTypeOfferings)
}

func seedInstanceTypes(s *Server) {
	st := instanceTypeState{types: catalog.EC2Shapes(), withdrawn: map[string]map[string]bool{}}
	st.infos = make([]instanceTypeInfo, len(st.types))
	for i := range st.types {
		st.infos[i] = instanceTypeInfoOf(&st.types[i])
	}
	s.state.instanceTypes = st
}

// RemoveOffering stops offering the instance type in the zone (DescribeInstanceTypeOfferings no longer lists
// it there).
func (s *Server) RemoveOffering(instanceType, zone string) {
	s.withState(func(st *state) {
		w := st.instanceTypes.withdrawn
		if w[instanceType] == nil {
			w[instanceType] = map[string]bool{}
		}
		w[instanceType][zone] = true
	})
}

// RestoreOffering offers the instance type in the zone again.
func (s *Server) RestoreOffering(instanceType, zone string) {
	s.withState(func(st *state) { delete(st.instanceTypes.withdrawn[instanceType], zone) })
}

// InstanceTypeNames are the names of the fake's instance types, sorted.
func (s *Server) InstanceTypeNames() []string {
	var out []string
	s.withState(func(st *state) {
		for i := range st.instanceTypes.types {
			out = append(out, st.instanceTypes.types[i].Name)
		}
	})
	return out
}

// instanceTypeInfo is an InstanceTypeInfo as EC2 writes it (element names as the SDK's deserializer reads
// them).
type instanceTypeInfo struct {
	InstanceType                 string                    `xml:"instanceType"`
	CurrentGeneration            bool                      `xml:"currentGeneration"`
	BareMetal                    bool                      `xml:"bareMetal"`
	Hypervisor                   string                    `xml:"hypervisor,omitempty"`
	SupportedUsageClasses        []string                  `xml:"supportedUsageClasses>item"`
	SupportedVirtualizationTypes []string                  `xml:"supportedVirtualizationTypes>item"`
	SupportedRootDeviceTypes     []string                  `xml:"supportedRootDeviceTypes>item"`
	VCpuInfo                     vCPUInfo                  `xml:"vCpuInfo"`
	MemoryInfo                   sizeInMiB                 `xml:"memoryInfo"`
	ProcessorInfo                processorInfo             `xml:"processorInfo"`
	NetworkInfo                  networkInfo               `xml:"networkInfo"`
	EbsInfo                      ebsInfo                   `xml:"ebsInfo"`
	InstanceStorageSupported     bool                      `xml:"instanceStorageSupported"`
	InstanceStorageInfo          *instanceStorageInfo      `xml:"instanceStorageInfo,omitempty"`
	GpuInfo                      *gpuInfo                  `xml:"gpuInfo,omitempty"`
	InferenceAcceleratorInfo     *inferenceAcceleratorInfo `xml:"inferenceAcceleratorInfo,omitempty"`
	NeuronInfo                   *neuronInfo               `xml:"neuronInfo,omitempty"`
}

type vCPUInfo struct {
	DefaultVCpus          int64 `xml:"defaultVCpus"`
	DefaultCores          int64 `xml:"defaultCores"`
	DefaultThreadsPerCore int64 `xml:"defaultThreadsPerCore"`
}

type sizeInMiB struct {
	SizeInMiB int64 `xml:"sizeInMiB"`
}

type processorInfo struct {
	SupportedArchitectures   []string `xml:"supportedArchitectures>item"`
	Manufacturer             string   `xml:"manufacturer,omitempty"`
	SustainedClockSpeedInGhz float64  `xml:"sustainedClockSpeedInGhz,omitempty"`
}

type networkInfo struct {
	NetworkPerformance           string        `xml:"networkPerformance"`
	MaximumNetworkInterfaces     int64         `xml:"maximumNetworkInterfaces"`
	MaximumNetworkCards          int64         `xml:"maximumNetworkCards"`
	DefaultNetworkCardIndex      int64         `xml:"defaultNetworkCardIndex"`
	NetworkCards                 []networkCard `xml:"networkCards>item"`
	Ipv4AddressesPerInterface    int64         `xml:"ipv4AddressesPerInterface"`
	Ipv6AddressesPerInterface    int64         `xml:"ipv6AddressesPerInterface"`
	Ipv6Supported                bool          `xml:"ipv6Supported"`
	EnaSupport                   string        `xml:"enaSupport"`
	EfaSupported                 bool          `xml:"efaSupported"`
	EfaInfo                      *efaInfo      `xml:"efaInfo,omitempty"`
	EncryptionInTransitSupported bool          `xml:"encryptionInTransitSupported"`
}

type networkCard struct {
	NetworkCardIndex         int64   `xml:"networkCardIndex"`
	NetworkPerformance       string  `xml:"networkPerformance"`
	MaximumNetworkInterfaces int64   `xml:"maximumNetworkInterfaces"`
	BaselineBandwidthInGbps  float64 `xml:"baselineBandwidthInGbps,omitempty"`
	PeakBandwidthInGbps      float64 `xml:"peakBandwidthInGbps,omitempty"`
}

type efaInfo struct {
	MaximumEfaInterfaces int64 `xml:"maximumEfaInterfaces"`
}

type ebsInfo struct {
	EbsOptimizedSupport string            `xml:"ebsOptimizedSupport"`
	EncryptionSupport   string            `xml:"encryptionSupport"`
	NvmeSupport         string            `xml:"nvmeSupport"`
	EbsOptimizedInfo    *ebsOptimizedInfo `xml:"ebsOptimizedInfo,omitempty"`
}

type ebsOptimizedInfo struct {
	BaselineBandwidthInMbps int64 `xml:"baselineBandwidthInMbps"`
	MaximumBandwidthInMbps  int64 `xml:"maximumBandwidthInMbps"`
}

type instanceStorageInfo struct {
	TotalSizeInGB     int64      `xml:"totalSizeInGB"`
	NvmeSupport       string     `xml:"nvmeSupport"`
	EncryptionSupport string     `xml:"encryptionSupport"`
	Disks             []diskInfo `xml:"disks>item"`
}

type diskInfo struct {
	SizeInGB int64  `xml:"sizeInGB"`
	Count    int64  `xml:"count"`
	Type     string `xml:"type"`
}

type gpuInfo struct {
	Gpus                []gpuDevice `xml:"gpus>item"`
	TotalGpuMemoryInMiB int64       `xml:"totalGpuMemoryInMiB"`
}

type gpuDevice struct {
	Name         string    `xml:"name"`
	Manufacturer string    `xml:"manufacturer"`
	Count        int64     `xml:"count"`
	MemoryInfo   sizeInMiB `xml:"memoryInfo"`
}

type inferenceAcceleratorInfo struct {
	Accelerators []inferenceDevice `xml:"accelerators>member"` // EC2 writes this one list with <member>
}

type inferenceDevice struct {
	Name         string `xml:"name"`
	Manufacturer string `xml:"manufacturer"`
	Count        int64  `xml:"count"`
}

type neuronInfo struct {
	NeuronDevices []neuronDevice `xml:"neuronDevices>item"`
}

type neuronDevice struct {
	Name     string         `xml:"name"`
	Count    int64          `xml:"count"`
	CoreInfo neuronCoreInfo `xml:"coreInfo"`
}

type neuronCoreInfo struct {
	Count int64 `xml:"count"`
}

// describeInstanceTypesMax is DescribeInstanceTypes' page size limit.
const describeInstanceTypesMax = 100

type describeInstanceTypesResponse struct {
	InstanceTypes []instanceTypeInfo `xml:"instanceTypeSet>item"`
	NextToken     string             `xml:"nextToken,omitempty"`
}

func (s *Server) describeInstanceTypes(q query) (any, error) {
	names := q.Strings("InstanceType")
	filters := filtersOf(q)
	var matched []instanceTypeInfo
	s.withState(func(st *state) {
		for i := range st.instanceTypes.infos {
			info := &st.instanceTypes.infos[i]
			if len(names) > 0 && !anyMatch(names, []string{info.InstanceType}) {
				continue
			}
			if !matchFilters(filters, nil, info.field) {
				continue
			}
			matched = append(matched, *info)
		}
	})
	if max, err := q.Int("MaxResults", describeInstanceTypesMax); err != nil {
		return nil, err
	} else if max > describeInstanceTypesMax {
		return nil, errorf("InvalidParameterValue", "MaxResults must be at most %d", describeInstanceTypesMax)
	}
	start, end, next, err := page(q, len(matched), describeInstanceTypesMax)
	if err != nil {
		return nil, err
	}
	return describeInstanceTypesResponse{InstanceTypes: matched[start:end], NextToken: next}, nil
}

// field answers the DescribeInstanceTypes filters the fake supports.
func (info *instanceTypeInfo) field(name string) []string {
	switch name {
	case "instance-type":
		return []string{info.InstanceType}
	case "current-generation":
		return []string{strconv.FormatBool(info.CurrentGeneration)}
	case "bare-metal":
		return []string{strconv.FormatBool(info.BareMetal)}
	case "hypervisor":
		return []string{info.Hypervisor}
	case "supported-usage-class":
		return info.SupportedUsageClasses
	case "supported-virtualization-type":
		return info.SupportedVirtualizationTypes
	case "processor-info.supported-architecture":
		return info.ProcessorInfo.SupportedArchitectures
	case "vcpu-info.default-vcpus":
		return []string{strconv.FormatInt(info.VCpuInfo.DefaultVCpus, 10)}
	case "memory-info.size-in-mib":
		return []string{strconv.FormatInt(info.MemoryInfo.SizeInMiB, 10)}
	}
	return nil
}

// instanceTypeInfoOf writes a catalog shape as EC2 describes the type. The catalog's lower-case values
// (manufacturers, GPU and accelerator names) come back capitalised as EC2 spells them; the ENI limits give
// the interfaces and addresses per interface (for the few types the data has none, a split of the max pods
// that gives them back).
func instanceTypeInfoOf(sh *catalog.Shape) instanceTypeInfo {
	arch := sh.Architecture
	if arch == "amd64" {
		arch = "x86_64"
	}
	info := instanceTypeInfo{
		InstanceType:                 sh.Name,
		CurrentGeneration:            sh.Generation >= 5 && !strings.HasPrefix(sh.Name, "t2."),
		BareMetal:                    sh.BareMetal,
		SupportedUsageClasses:        []string{"on-demand", "spot"},
		SupportedVirtualizationTypes: []string{"hvm"},
		SupportedRootDeviceTypes:     []string{"ebs"},
		VCpuInfo:                     vCPUInfo{DefaultVCpus: sh.VCPU, DefaultCores: max(sh.VCPU/2, 1), DefaultThreadsPerCore: min(sh.VCPU, 2)},
		MemoryInfo:                   sizeInMiB{SizeInMiB: sh.MemoryMiB},
		ProcessorInfo: processorInfo{
			SupportedArchitectures:   []string{arch},
			Manufacturer:             ec2Spelling(sh.CPUManufacturer),
			SustainedClockSpeedInGhz: sh.CPUSustainedClockMHz / 1000,
		},
		EbsInfo: ebsInfo{EbsOptimizedSupport: "unsupported", EncryptionSupport: "supported", NvmeSupport: "required"},
	}
	if sh.Hypervisor != nil {
		info.Hypervisor = *sh.Hypervisor
	}
	enis, ips := eniLimits(sh)
	performance := "Up to 5 Gigabit"
	var baselineGbps float64
	if b := sh.NetworkBandwidthMbps; b != nil {
		baselineGbps = float64(*b) / 1000
		performance = strconv.FormatFloat(baselineGbps, 'f', -1, 64) + " Gigabit"
	}
	info.NetworkInfo = networkInfo{
		NetworkPerformance: performance, MaximumNetworkInterfaces: enis, MaximumNetworkCards: 1,
		NetworkCards:              []networkCard{{NetworkPerformance: performance, MaximumNetworkInterfaces: enis, BaselineBandwidthInGbps: baselineGbps, PeakBandwidthInGbps: baselineGbps}},
		Ipv4AddressesPerInterface: ips, Ipv6AddressesPerInterface: ips, Ipv6Supported: true, EnaSupport: "required",
		EncryptionInTransitSupported: sh.EncryptionInTransit,
	}
	if e := sh.ENI; e != nil && len(e.NetworkCardMaxENIs) > 1 {
		info.NetworkInfo.MaximumNetworkCards = int64(len(e.NetworkCardMaxENIs))
		info.NetworkInfo.MaximumNetworkInterfaces = e.MaxENIs
		for i, n := range e.NetworkCardMaxENIs[1:] {
			info.NetworkInfo.NetworkCards = append(info.NetworkInfo.NetworkCards, networkCard{NetworkCardIndex: int64(i + 1), NetworkPerformance: performance, MaximumNetworkInterfaces: n})
		}
	}
	if efa := sh.ExtendedResources.Count("vpc.amazonaws.com/efa"); efa > 0 {
		info.NetworkInfo.EfaSupported = true
		info.NetworkInfo.EfaInfo = &efaInfo{MaximumEfaInterfaces: efa}
	}
	if b := sh.EBSBandwidthMbps; b != nil {
		info.EbsInfo.EbsOptimizedSupport = "default"
		info.EbsInfo.EbsOptimizedInfo = &ebsOptimizedInfo{BaselineBandwidthInMbps: *b, MaximumBandwidthInMbps: *b}
	}
	if n := sh.LocalNVMeGiB; n != nil {
		info.InstanceStorageSupported = true
		info.InstanceStorageInfo = &instanceStorageInfo{TotalSizeInGB: *n, NvmeSupport: "required", EncryptionSupport: "required", Disks: []diskInfo{{SizeInGB: *n, Count: 1, Type: "ssd"}}}
	}
	if g := sh.GPU; g != nil {
		info.GpuInfo = &gpuInfo{
			Gpus:                []gpuDevice{{Name: ec2Spelling(g.Name), Manufacturer: ec2Spelling(g.Manufacturer), Count: g.Count, MemoryInfo: sizeInMiB{SizeInMiB: g.MemoryMiBPerGPU}}},
			TotalGpuMemoryInMiB: g.Count * g.MemoryMiBPerGPU,
		}
	}
	if a := sh.Accelerator; a != nil {
		if devices := sh.ExtendedResources.Count("aws.amazon.com/neuron"); devices > 0 {
			cores := sh.ExtendedResources.Count("aws.amazon.com/neuroncore") / devices
			info.NeuronInfo = &neuronInfo{NeuronDevices: []neuronDevice{{Name: ec2Spelling(a.Name), Count: a.Count, CoreInfo: neuronCoreInfo{Count: cores}}}}
		} else {
			info.InferenceAcceleratorInfo = &inferenceAcceleratorInfo{Accelerators: []inferenceDevice{{Name: ec2Spelling(a.Name), Manufacturer: ec2Spelling(a.Manufacturer), Count: a.Count}}}
		}
	}
	return info
}

// eniLimits are the network interfaces of the default card and the IPv4 addresses per interface: the data's,
// or for a type without them a split with interfaces × (addresses − 1) + 2 = max pods.
func eniLimits(sh *catalog.Shape) (enis, ipsPerENI int64) {
	if e := sh.ENI; e != nil {
		return e.DefaultCardMaxENIs, e.IPv4PerENI
	}
	usable := max(sh.MaxPods-2, 1)
	for n := int64(15); n > 1; n-- {
		if usable%n == 0 {
			return n, usable/n + 1
		}
	}
	return 1, usable + 1
}

// ec2Spelling writes a catalog value (lower case, words joined by dashes) as EC2 spells it: manufacturers
// by their names, anything else in words with capitals ("radeon-pro-v520" → "Radeon Pro V520").
func ec2Spelling(v string) string {
	switch v {
	case "":
		return ""
	case "intel":
		return "Intel"
	case "amd":
		return "AMD"
	case "aws":
		return "AWS"
	case "nvidia":
		return "NVIDIA"
	}
	words := strings.Split(v, "-")
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}

// describeInstanceTypeOfferingsMax is DescribeInstanceTypeOfferings' page size limit.
const describeInstanceTypeOfferingsMax = 1000

type instanceTypeOffering struct {
	InstanceType string `xml:"instanceType"`
	LocationType string `xml:"locationType"`
	Location     string `xml:"location"`
}

type describeInstanceTypeOfferingsResponse struct {
	Offerings []instanceTypeOffering `xml:"instanceTypeOfferingSet>item"`
	NextToken string                 `xml:"nextToken,omitempty"`
}

func (s *Server) describeInstanceTypeOfferings(q query) (any, error) {
	locationType := q["LocationType"]
	if locationType == "" {
		locationType = "region"
	}
	if locationType != "region" && locationType != "availability-zone" && locationType != "availability-zone-id" {
		return nil, errorf("InvalidParameterValue", "LocationType %q is not valid", locationType)
	}
	filters := filtersOf(q)
	var matched []instanceTypeOffering
	s.withState(func(st *state) {
		for i := range st.instanceTypes.types {
			name := st.instanceTypes.types[i].Name
			var locations []string
			for _, z := range st.zones.names {
				if st.instanceTypes.withdrawn[name][z] {
					continue
				}
				switch locationType {
				case "availability-zone":
					locations = append(locations, z)
				case "availability-zone-id":
					locations = append(locations, st.zones.ids[z])
				}
			}
			if locationType == "region" && len(locations) == 0 && len(st.zones.names) > len(st.instanceTypes.withdrawn[name]) {
				locations = []string{s.opts.Region}
			}
			for _, loc := range locations {
				o := instanceTypeOffering{InstanceType: name, LocationType: locationType, Location: loc}
				if !matchFilters(filters, nil, func(f string) []string {
					switch f {
					case "instance-type":
						return []string{o.InstanceType}
					case "location":
						return []string{o.Location}
					}
					return nil
				}) {
					continue
				}
				matched = append(matched, o)
			}
		}
	})
	if max, err := q.Int("MaxResults", describeInstanceTypeOfferingsMax); err != nil {
		return nil, err
	} else if max > describeInstanceTypeOfferingsMax {
		return nil, errorf("InvalidParameterValue", "MaxResults must be at most %d", describeInstanceTypeOfferingsMax)
	}
	start, end, next, err := page(q, len(matched), describeInstanceTypeOfferingsMax)
	if err != nil {
		return nil, err
	}
	return describeInstanceTypeOfferingsResponse{Offerings: matched[start:end], NextToken: next}, nil
}
