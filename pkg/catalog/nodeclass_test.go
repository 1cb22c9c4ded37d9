package catalog_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

func ec2Catalog(t *testing.T) cloudprovider.InstanceTypes {
	t.Helper()
	its, err := catalog.EC2(catalog.EC2Options{})
	if err != nil {
		t.Fatal(err)
	}
	return its
}

func al2023(mutate func(*awsv1.EC2NodeClassSpec)) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}}}
	if mutate != nil {
		mutate(&nc.Spec)
	}
	return nc
}

// The model reproduces the data: a node class that changes nothing gives every type the allocatable
// Karpenter's generated instance-type reference states.
func TestForNodeClassDefaultsReproduceTheCatalog(t *testing.T) {
	its := ec2Catalog(t)
	for _, nc := range []*awsv1.EC2NodeClass{nil, al2023(nil)} {
		for i, got := range catalog.ForNodeClass(its, nc) {
			want := its[i].Allocatable()
			have := got.Allocatable()
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods} {
				if w, h := want[name], have[name]; w.Cmp(h) != 0 {
					t.Fatalf("%s %s: allocatable %s, catalog says %s", got.Name, name, h.String(), w.String())
				}
			}
		}
	}
}

func allocatable(t *testing.T, nc *awsv1.EC2NodeClass, name string) corev1.ResourceList {
	t.Helper()
	it := byName(catalog.ForNodeClass(ec2Catalog(t), nc), name)
	if it == nil {
		t.Fatalf("no %s", name)
	}
	return it.Allocatable()
}

func expectQuantity(t *testing.T, what string, got resource.Quantity, want string) {
	t.Helper()
	if got.Cmp(resource.MustParse(want)) != 0 {
		t.Errorf("%s = %s, want %s", what, got.String(), want)
	}
}

// c6a.large: 2 vCPUs, 4096 MiB, 29 pods by its ENI limit; allocatable 1930m, 3114 MiB, 17 GiB, 29 pods.
func TestForNodeClassKubelet(t *testing.T) {
	t.Run("maxPods raises the pod count and the memory reserved for it", func(t *testing.T) {
		got := allocatable(t, al2023(func(s *awsv1.EC2NodeClassSpec) { s.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](110)} }), "c6a.large")
		expectQuantity(t, "pods", got[corev1.ResourcePods], "110")
		expectQuantity(t, "memory", got[corev1.ResourceMemory], "2223Mi") // 3114 − 11 × (110 − 29)
	})
	t.Run("podsPerCore caps pods at vCPUs times it", func(t *testing.T) {
		got := allocatable(t, al2023(func(s *awsv1.EC2NodeClassSpec) {
			s.Kubelet = &awsv1.KubeletConfiguration{PodsPerCore: ptr.To[int32](4)}
		}), "c6a.large")
		expectQuantity(t, "pods", got[corev1.ResourcePods], "8")
	})
	t.Run("kubeReserved and systemReserved replace and add to the defaults", func(t *testing.T) {
		got := allocatable(t, al2023(func(s *awsv1.EC2NodeClassSpec) {
			s.Kubelet = &awsv1.KubeletConfiguration{
				KubeReserved:   map[string]string{"cpu": "500m", "memory": "1Gi", "pid": "1000"},
				SystemReserved: map[string]string{"cpu": "100m"},
			}
		}), "c6a.large")
		expectQuantity(t, "cpu", got[corev1.ResourceCPU], "1400m")
		expectQuantity(t, "memory", got[corev1.ResourceMemory], "2664Mi") // 4096 − 308 (VM) − 1024 − 100 (eviction)
	})
	t.Run("the larger eviction threshold of hard and soft applies", func(t *testing.T) {
		got := allocatable(t, al2023(func(s *awsv1.EC2NodeClassSpec) {
			s.Kubelet = &awsv1.KubeletConfiguration{
				EvictionHard: map[string]string{"memory.available": "5%", "nodefs.available": "20%"},
				EvictionSoft: map[string]string{"memory.available": "300Mi"},
			}
		}), "c6a.large")
		expectQuantity(t, "memory", got[corev1.ResourceMemory], "2914Mi")                    // 3114 + 100 − 300
		expectQuantity(t, "ephemeral-storage", got[corev1.ResourceEphemeralStorage], "15Gi") // 20 − 1 − 4
	})
}

func TestForNodeClassRootVolume(t *testing.T) {
	gi := func(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
	t.Run("the AMI family's root device", func(t *testing.T) {
		got := allocatable(t, al2023(func(s *awsv1.EC2NodeClassSpec) {
			s.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: gi("50Gi")}}}
		}), "c6a.large")
		expectQuantity(t, "ephemeral-storage", got[corev1.ResourceEphemeralStorage], "44Gi") // 50 − 1 − 5
	})
	t.Run("a mapping marked rootVolume wins", func(t *testing.T) {
		got := allocatable(t, al2023(func(s *awsv1.EC2NodeClassSpec) {
			s.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{
				{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: gi("50Gi")}},
				{DeviceName: ptr.To("/dev/xvdc"), RootVolume: true, EBS: &awsv1.BlockDevice{VolumeSize: gi("100Gi")}},
			}
		}), "c6a.large")
		expectQuantity(t, "ephemeral-storage", got[corev1.ResourceEphemeralStorage], "89Gi") // 100 − 1 − 10
	})
	t.Run("Bottlerocket keeps pods' storage on /dev/xvdb", func(t *testing.T) {
		got := allocatable(t, &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}},
			BlockDeviceMappings: []*awsv1.BlockDeviceMapping{
				{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: gi("4Gi")}},
				{DeviceName: ptr.To("/dev/xvdb"), EBS: &awsv1.BlockDevice{VolumeSize: gi("30Gi")}},
			},
		}}, "c6a.large")
		expectQuantity(t, "ephemeral-storage", got[corev1.ResourceEphemeralStorage], "26Gi") // 30 − 1 − 3
	})
}

// VM_MEMORY_OVERHEAD_PERCENT changes what a type's memory offers as Karpenter's AWS provider computes it:
// capacity less ceil(MiB × percent) MiB. c6a.large has 4096 MiB: 308 MiB at the default 7.5 %, 410 MiB at
// 10 %, none at 0.
func TestForNodeClassVMMemoryOverheadPercent(t *testing.T) {
	its := ec2Catalog(t)
	memory := func(percent float64) resource.Quantity {
		t.Helper()
		it := byName(catalog.ForNodeClassWithVMOverhead(its, al2023(nil), percent), "c6a.large")
		if it == nil {
			t.Fatal("no c6a.large")
		}
		return it.Allocatable()[corev1.ResourceMemory]
	}
	base := memory(catalog.DefaultVMMemoryOverheadPercent)
	expectQuantity(t, "allocatable memory at 7.5%", base, "3114Mi")
	for _, tc := range []struct {
		percent float64
		delta   int64 // MiB more than at the default
	}{{0.1, 308 - 410}, {0, 308}, {0.075, 0}} {
		want := base.DeepCopy()
		want.Add(*resource.NewQuantity(tc.delta<<20, resource.BinarySI))
		expectQuantity(t, "allocatable memory", memory(tc.percent), want.String())
	}
}
