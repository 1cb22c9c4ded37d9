package catalog

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// Facts of Karpenter's scheduling benchmark catalog.
const (
	benchmarkTypeCount      = 400
	benchmarkPricePerVCPU   = 0.3147483648
	benchmarkOverheadCPU    = "100m"
	benchmarkOverheadMemory = "10Mi"
)

// KarpenterBenchmark returns the 400 instance types of Karpenter's scheduling benchmark: fake-it-<i> for
// i = 0..399 with i+1 vCPU, 2(i+1) GiB memory, 10(i+1) pods, 100m cpu and 10Mi memory overhead, price
// (i+1) × 0.3147483648 at every offering, spot in test-zone-1 and test-zone-2, on-demand in test-zone-1..3,
// arch amd64 and os linux, windows or darwin.
func KarpenterBenchmark() cloudprovider.InstanceTypes {
	out := make(cloudprovider.InstanceTypes, 0, benchmarkTypeCount)
	for i := range benchmarkTypeCount {
		n := int64(i + 1)
		price := float64(n) * benchmarkPricePerVCPU
		offerings := cloudprovider.Offerings{
			{Zone: "test-zone-1", CapacityType: v1.CapacityTypeSpot, Price: price, Available: true},
			{Zone: "test-zone-2", CapacityType: v1.CapacityTypeSpot, Price: price, Available: true},
			{Zone: "test-zone-1", CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
			{Zone: "test-zone-2", CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
			{Zone: "test-zone-3", CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
		}
		name := fmt.Sprintf("fake-it-%d", i)
		reqs := scheduling.FromLabels(map[string]string{v1.LabelInstanceType: name, v1.LabelArch: "amd64"})
		reqs.Add(scheduling.MustRequirement(v1.LabelOS, corev1.NodeSelectorOpIn, "linux", "windows", "darwin"))
		out = append(out, &cloudprovider.InstanceType{
			Name:         name,
			Requirements: withOfferingRequirements(reqs, offerings),
			Offerings:    offerings,
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(n, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(2*n*gibibyte, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(10*n, resource.DecimalSI),
			},
			Overhead: cloudprovider.InstanceTypeOverhead{KubeReserved: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(benchmarkOverheadCPU),
				corev1.ResourceMemory: resource.MustParse(benchmarkOverheadMemory),
			}},
		})
	}
	return out
}
