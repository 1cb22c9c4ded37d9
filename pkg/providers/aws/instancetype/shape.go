package instancetype

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/lathe-autoscaler/lathe/pkg/catalog"
)

// Extended resources a type's hardware gives its nodes.
const (
	resourceNVIDIAGPU  = "nvidia.com/gpu"
	resourceAMDGPU     = "amd.com/gpu"
	resourceNeuron     = "aws.amazon.com/neuron"
	resourceNeuronCore = "aws.amazon.com/neuroncore"
	resourceEFA        = "vpc.amazonaws.com/efa"
	resourcePodENI     = "vpc.amazonaws.com/pod-eni"
)

// categoryAndGeneration reads an instance family: letters, an optional memory size (u-6tb1), the
// generation digits.
var categoryAndGeneration = regexp.MustCompile(`^([a-z]+)(-[0-9]+tb)?([0-9]+)`)

// shapeOf reads what DescribeInstanceTypes says of a type, the way Karpenter's AWS provider reads it:
// manufacturer and device names in lower-kebab case, the clock in whole MHz, local NVMe when the storage
// supports it, EBS bandwidth when EBS optimisation is on by default, pods from the default network card's
// interfaces less reservedENIs. Two facts EC2 does not describe come from the embedded data by name, as
// Karpenter takes them from its generated tables: the network bandwidth and the branch interfaces
// (vpc.amazonaws.com/pod-eni). The recorded allocatable is kept when the recorded type has the same vCPUs,
// memory and pods, so that nodes reserve what the recorded figures reserve.
func shapeOf(info *ec2types.InstanceTypeInfo, reservedENIs int) catalog.Shape {
	name := string(info.InstanceType)
	family, size, _ := strings.Cut(name, ".")
	s := catalog.Shape{Name: name, Family: family, Size: size, Flex: strings.Contains(family, "-flex"), BareMetal: aws.ToBool(info.BareMetal)}
	if m := categoryAndGeneration.FindStringSubmatch(family); m != nil {
		s.Category = m[1]
		s.Generation, _ = strconv.Atoi(m[3])
	}
	if info.VCpuInfo != nil {
		s.VCPU = int64(aws.ToInt32(info.VCpuInfo.DefaultVCpus))
	}
	if info.MemoryInfo != nil {
		s.MemoryMiB = aws.ToInt64(info.MemoryInfo.SizeInMiB)
	}
	if p := info.ProcessorInfo; p != nil {
		if len(p.SupportedArchitectures) > 0 {
			s.Architecture = architecture(p.SupportedArchitectures[0])
		}
		s.CPUManufacturer = lowerKebab(aws.ToString(p.Manufacturer))
		s.CPUSustainedClockMHz = math.Round(aws.ToFloat64(p.SustainedClockSpeedInGhz) * 1000)
	}
	if info.Hypervisor != "" {
		h := string(info.Hypervisor)
		s.Hypervisor = &h
	}
	readNetwork(&s, info.NetworkInfo, reservedENIs)
	if e := info.EbsInfo; e != nil && e.EbsOptimizedInfo != nil && e.EbsOptimizedSupport == ec2types.EbsOptimizedSupportDefault {
		s.EBSBandwidthMbps = aws.Int64(int64(aws.ToInt32(e.EbsOptimizedInfo.MaximumBandwidthInMbps)))
	}
	if st := info.InstanceStorageInfo; st != nil && st.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported && st.TotalSizeInGB != nil {
		s.LocalNVMeGiB = aws.Int64(*st.TotalSizeInGB)
	}
	readAccelerators(&s, info)
	if rec, ok := catalog.EC2Shape(name); ok {
		if rec.NetworkBandwidthMbps != nil {
			s.NetworkBandwidthMbps = rec.NetworkBandwidthMbps
		}
		if n := rec.ExtendedResources.Count(resourcePodENI); n > 0 {
			s.ExtendedResources = append(s.ExtendedResources, catalog.Resource{Name: resourcePodENI, Count: n})
		}
		if rec.VCPU == s.VCPU && rec.MemoryMiB == s.MemoryMiB && rec.MaxPods == s.MaxPods {
			s.Allocatable = rec.Allocatable
		}
	}
	s.ExtendedResources.Sort()
	return s
}

// readNetwork reads pods, EFA interfaces, encryption in transit and, for types the embedded data lacks,
// the bandwidth.
func readNetwork(s *catalog.Shape, n *ec2types.NetworkInfo, reservedENIs int) {
	if n == nil {
		return
	}
	s.EncryptionInTransit = aws.ToBool(n.EncryptionInTransitSupported)
	enis := int64(aws.ToInt32(n.MaximumNetworkInterfaces))
	var baselineGbps float64
	if i := int(aws.ToInt32(n.DefaultNetworkCardIndex)); i < len(n.NetworkCards) {
		card := n.NetworkCards[i]
		enis = int64(aws.ToInt32(card.MaximumNetworkInterfaces))
		baselineGbps = aws.ToFloat64(card.BaselineBandwidthInGbps)
	}
	s.MaxPods = eniLimitedPods(enis, int64(aws.ToInt32(n.Ipv4AddressesPerInterface)), int64(reservedENIs))
	if baselineGbps > 0 {
		s.NetworkBandwidthMbps = aws.Int64(int64(math.Round(baselineGbps * 1000)))
	}
	if aws.ToBool(n.EfaSupported) && n.EfaInfo != nil {
		if efa := int64(aws.ToInt32(n.EfaInfo.MaximumEfaInterfaces)); efa > 0 {
			s.ExtendedResources = append(s.ExtendedResources, catalog.Resource{Name: resourceEFA, Count: efa})
		}
	}
}

// eniLimitedPods is the VPC CNI's pod limit: usable interfaces × (addresses per interface − 1) + 2, none
// when every interface is reserved.
func eniLimitedPods(enis, addressesPerENI, reserved int64) int64 {
	usable := max(enis-reserved, 0)
	if usable == 0 {
		return 0
	}
	return usable*(addressesPerENI-1) + 2
}

// readAccelerators reads GPUs, Neuron devices and (for types without Neuron) inference accelerators.
func readAccelerators(s *catalog.Shape, info *ec2types.InstanceTypeInfo) {
	if g := info.GpuInfo; g != nil && len(g.Gpus) == 1 {
		gpu := g.Gpus[0]
		s.GPU = &catalog.GPU{Count: int64(aws.ToInt32(gpu.Count)), Name: lowerKebab(aws.ToString(gpu.Name)), Manufacturer: lowerKebab(aws.ToString(gpu.Manufacturer))}
		if gpu.MemoryInfo != nil {
			s.GPU.MemoryMiBPerGPU = int64(aws.ToInt32(gpu.MemoryInfo.SizeInMiB))
		}
		switch {
		case s.GPU.Count == 0: // a fraction of a GPU (g6f): labelled, but no whole device to request
		case s.GPU.Manufacturer == "nvidia":
			s.ExtendedResources = append(s.ExtendedResources, catalog.Resource{Name: resourceNVIDIAGPU, Count: s.GPU.Count})
		case s.GPU.Manufacturer == "amd":
			s.ExtendedResources = append(s.ExtendedResources, catalog.Resource{Name: resourceAMDGPU, Count: s.GPU.Count})
		}
	}
	if n := info.NeuronInfo; n != nil && len(n.NeuronDevices) == 1 {
		d := n.NeuronDevices[0]
		count := int64(aws.ToInt32(d.Count))
		s.Accelerator = &catalog.Accelerator{Count: count, Name: lowerKebab(aws.ToString(d.Name)), Manufacturer: "aws"}
		s.ExtendedResources = append(s.ExtendedResources, catalog.Resource{Name: resourceNeuron, Count: count})
		if d.CoreInfo != nil {
			s.ExtendedResources = append(s.ExtendedResources, catalog.Resource{Name: resourceNeuronCore, Count: count * int64(aws.ToInt32(d.CoreInfo.Count))})
		}
		return
	}
	if a := info.InferenceAcceleratorInfo; a != nil && len(a.Accelerators) == 1 {
		acc := a.Accelerators[0]
		s.Accelerator = &catalog.Accelerator{Count: int64(aws.ToInt32(acc.Count)), Name: lowerKebab(aws.ToString(acc.Name)), Manufacturer: lowerKebab(aws.ToString(acc.Manufacturer))}
	}
}

// architecture is the Kubernetes name of an EC2 architecture.
func architecture(a ec2types.ArchitectureType) string {
	switch a {
	case ec2types.ArchitectureTypeX8664:
		return "amd64"
	case ec2types.ArchitectureTypeArm64:
		return "arm64"
	}
	return string(a)
}

// lowerKebab writes a name as a label value: lower case, words joined by dashes ("Radeon Pro V520" →
// "radeon-pro-v520").
func lowerKebab(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), "-"))
}
