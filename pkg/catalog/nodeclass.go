package catalog

import (
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// The parts of the AWS provider's overhead model that don't depend on the node class.
const (
	// DefaultVMMemoryOverheadPercent is the share of an instance's memory the hypervisor and OS keep
	// (VM_MEMORY_OVERHEAD_PERCENT's default); the catalog's allocatable figures assume it.
	DefaultVMMemoryOverheadPercent = 0.075
	// Default eviction thresholds: memory.available and nodefs.available.
	defaultEvictionMemoryMiB   = 100
	defaultEvictionNodeFSShare = 0.10
)

// defaultRootDevice is the block device each AMI family's ephemeral storage lives on, and defaultRootGiB
// its size when the node class maps no such device.
func defaultRootDevice(family string) (string, int64) {
	switch family {
	case awsv1.AMIFamilyBottlerocket:
		return "/dev/xvdb", 20
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return "/dev/sda1", 50
	}
	return "/dev/xvda", 20
}

// ForNodeClass returns the instance types as nodes launched from the node class have them, computed the way
// Karpenter's AWS provider does: pods from kubelet.maxPods (else the ENI limit the catalog states), capped
// by podsPerCore × vCPUs; ephemeral storage from the root volume of the node class's block device mappings
// (else the AMI family's default); kube-reserved cpu by the tiered share of the vCPUs (6 % of the first core,
// 1 % of the second, 0.5 % of the next two, 0.25 % of the rest), memory 11 MiB per pod + 255 MiB and 1 GiB of
// ephemeral storage, each replaced by kubelet.kubeReserved; kubelet.systemReserved as given; eviction
// thresholds of 100 MiB memory and 10 % of ephemeral storage, replaced by the larger of kubelet.evictionHard
// and kubelet.evictionSoft (soft thresholds are ignored for Windows). The hypervisor's share of memory
// (DefaultVMMemoryOverheadPercent) is reported with kube-reserved, and so is whatever the catalog's allocatable keeps back beyond this
// model (59 MiB of memory on arm64 types). With a node class that sets none of these, every type's
// allocatable is the catalog's.
//
// The input types are not changed; capacity, overhead and requirements of the copies are new maps.
func ForNodeClass(its cloudprovider.InstanceTypes, nodeClass *awsv1.EC2NodeClass) cloudprovider.InstanceTypes {
	return ForNodeClassWithVMOverhead(its, nodeClass, DefaultVMMemoryOverheadPercent)
}

// ForNodeClassWithVMOverhead is ForNodeClass with the hypervisor's share of memory set by
// VM_MEMORY_OVERHEAD_PERCENT (a fraction: 0.075 is 7.5 %). As in Karpenter's AWS provider, the share is
// ceil(memory × percent) MiB, taken off what nodes of the type can offer.
func ForNodeClassWithVMOverhead(its cloudprovider.InstanceTypes, nodeClass *awsv1.EC2NodeClass, vmMemoryOverheadPercent float64) cloudprovider.InstanceTypes {
	settings := nodeSettingsOf(nodeClass)
	settings.vmMemoryOverheadPercent = vmMemoryOverheadPercent
	out := make(cloudprovider.InstanceTypes, 0, len(its))
	for _, it := range its {
		out = append(out, settings.apply(it))
	}
	return out
}

// nodeSettings are what of a node class shapes an instance type's capacity and overhead.
type nodeSettings struct {
	family                       string
	vmMemoryOverheadPercent      float64
	maxPods, podsPerCore         *int32
	kubeReserved, systemReserved map[string]string
	evictionHard, evictionSoft   map[string]string
	rootGiB                      resource.Quantity
}

func nodeSettingsOf(nc *awsv1.EC2NodeClass) nodeSettings {
	family := awsv1.AMIFamilyAL2023
	if nc != nil {
		family = nc.AMIFamily()
	}
	device, defaultGiB := defaultRootDevice(family)
	s := nodeSettings{family: family, vmMemoryOverheadPercent: DefaultVMMemoryOverheadPercent, rootGiB: *resource.NewQuantity(defaultGiB*gibibyte, resource.BinarySI)}
	if nc == nil {
		return s
	}
	if k := nc.Spec.Kubelet; k != nil {
		s.maxPods, s.podsPerCore = k.MaxPods, k.PodsPerCore
		s.kubeReserved, s.systemReserved = k.KubeReserved, k.SystemReserved
		s.evictionHard, s.evictionSoft = k.EvictionHard, k.EvictionSoft
	}
	var byRoot, byDevice *resource.Quantity
	for _, m := range nc.Spec.BlockDeviceMappings {
		if m == nil || m.EBS == nil || m.EBS.VolumeSize == nil {
			continue
		}
		if m.RootVolume {
			byRoot = m.EBS.VolumeSize
		}
		if m.DeviceName != nil && *m.DeviceName == device && byDevice == nil {
			byDevice = m.EBS.VolumeSize
		}
	}
	switch {
	case byRoot != nil:
		s.rootGiB = byRoot.DeepCopy()
	case byDevice != nil:
		s.rootGiB = byDevice.DeepCopy()
	}
	return s
}

// catalogSettings are the assumptions of the catalog's allocatable figures: AL2023, no block device
// mappings, default kubelet.
var catalogSettings = nodeSettingsOf(nil)

func (s nodeSettings) apply(it *cloudprovider.InstanceType) *cloudprovider.InstanceType {
	out := s.model(it)
	// What the catalog reserves beyond the model (59 MiB of memory on every arm64 type, for one) stays
	// reserved whatever the node class says.
	expected := catalogSettings.model(it).Allocatable()
	stated := it.Allocatable()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		extra := expected[name]
		extra.Sub(stated[name])
		if extra.Sign() <= 0 {
			continue
		}
		q := out.Overhead.KubeReserved[name]
		q.Add(extra)
		out.Overhead.KubeReserved[name] = q
	}
	return out
}

// model computes the type's capacity and overhead under the settings from its capacity alone.
func (s nodeSettings) model(it *cloudprovider.InstanceType) *cloudprovider.InstanceType {
	out := *it
	out.Capacity = it.Capacity.DeepCopy()
	cpu := it.Capacity.Cpu().MilliValue()
	memoryMiB := it.Capacity.Memory().Value() / mebibyte
	pods := it.Capacity.Pods().Value()
	if s.maxPods != nil {
		pods = int64(*s.maxPods)
	}
	if s.podsPerCore != nil && *s.podsPerCore > 0 {
		pods = min(pods, int64(*s.podsPerCore)*(cpu/1000))
	}
	out.Capacity[corev1.ResourcePods] = *resource.NewQuantity(pods, resource.DecimalSI)
	out.Capacity[corev1.ResourceEphemeralStorage] = s.rootGiB.DeepCopy()

	kubeReserved := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(kubeReservedCPU(cpu), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity((11*pods+255)*mebibyte, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(gibibyte, resource.BinarySI),
	}
	overrideResources(kubeReserved, s.kubeReserved)
	// The hypervisor's share, which Karpenter takes off capacity, is reported here with kube-reserved.
	vmMiB := vmOverheadMiB(memoryMiB, s.vmMemoryOverheadPercent)
	mem := kubeReserved[corev1.ResourceMemory]
	mem.Add(*resource.NewQuantity(vmMiB*mebibyte, resource.BinarySI))
	kubeReserved[corev1.ResourceMemory] = mem

	systemReserved := corev1.ResourceList{}
	overrideResources(systemReserved, s.systemReserved)

	visibleMemory := *resource.NewQuantity((memoryMiB-vmMiB)*mebibyte, resource.BinarySI)
	out.Overhead = cloudprovider.InstanceTypeOverhead{
		KubeReserved:      kubeReserved,
		SystemReserved:    systemReserved,
		EvictionThreshold: s.evictionThreshold(visibleMemory, s.rootGiB),
	}
	return &out
}

// vmOverheadMiB is the hypervisor's share of memoryMiB, rounded up to whole MiB as Karpenter's AWS provider
// rounds it (it computes on bytes and rounds the MiB up).
func vmOverheadMiB(memoryMiB int64, percent float64) int64 {
	return int64(math.Ceil(float64(memoryMiB*mebibyte) * percent / 1024 / 1024))
}

// kubeReservedCPU is the tiered kube-reserved cpu, in millicores, for cpu millicores.
func kubeReservedCPU(cpu int64) int64 {
	reserved := 0.0
	for _, tier := range []struct {
		from, to int64
		share    float64
	}{{0, 1000, 0.06}, {1000, 2000, 0.01}, {2000, 4000, 0.005}, {4000, math.MaxInt64, 0.0025}} {
		if cpu <= tier.from {
			break
		}
		reserved += float64(min(cpu, tier.to)-tier.from) * tier.share
	}
	return int64(reserved)
}

// evictionThreshold is the memory and ephemeral storage the kubelet keeps free.
func (s nodeSettings) evictionThreshold(memory, storage resource.Quantity) corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourceMemory:           *resource.NewQuantity(defaultEvictionMemoryMiB*mebibyte, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(math.Ceil(float64(storage.Value())*defaultEvictionNodeFSShare)), resource.BinarySI),
	}
	signals := []map[string]string{s.evictionHard}
	if !strings.HasPrefix(s.family, "Windows") {
		signals = append(signals, s.evictionSoft)
	}
	overrides := corev1.ResourceList{}
	for _, m := range signals {
		for signal, name := range map[string]corev1.ResourceName{"memory.available": corev1.ResourceMemory, "nodefs.available": corev1.ResourceEphemeralStorage} {
			value, ok := m[signal]
			if !ok {
				continue
			}
			base := memory
			if name == corev1.ResourceEphemeralStorage {
				base = storage
			}
			q, ok := evictionSignal(base, value)
			if !ok {
				continue
			}
			if have, seen := overrides[name]; !seen || q.Cmp(have) > 0 {
				overrides[name] = q
			}
		}
	}
	for name, q := range overrides {
		out[name] = q
	}
	return out
}

// evictionSignal is a threshold value: a quantity, or a percentage of base.
func evictionSignal(base resource.Quantity, value string) (resource.Quantity, bool) {
	if pct, ok := strings.CutSuffix(value, "%"); ok {
		p, err := resource.ParseQuantity(pct)
		if err != nil {
			return resource.Quantity{}, false
		}
		bytes := math.Ceil(float64(base.Value()) * p.AsApproximateFloat64() / 100)
		return *resource.NewQuantity(int64(bytes), resource.BinarySI), true
	}
	q, err := resource.ParseQuantity(value)
	return q, err == nil
}

// overrideResources sets cpu, memory and ephemeral-storage to the given values. pid, the other key the API
// allows, is no resource pods request; values that don't parse are left out, as CRD validation has already
// refused them.
func overrideResources(list corev1.ResourceList, values map[string]string) {
	for name, value := range values {
		switch corev1.ResourceName(name) {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
			if q, err := resource.ParseQuantity(value); err == nil {
				list[corev1.ResourceName(name)] = q
			}
		}
	}
}
