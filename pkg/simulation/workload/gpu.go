package workload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceNvidiaGPU is the extended resource NVIDIA's device plugin advertises.
const ResourceNvidiaGPU corev1.ResourceName = "nvidia.com/gpu"

// GPU returns n pods of a GPU cluster's mix, drawn from one math/rand source seeded with Seed: about four in
// five request 1, 2, 4 or 8 nvidia.com/gpu (fewer as the count grows), the rest none; each requests 1–64
// cpu (more with more GPUs) and 1–512 GiB of memory (1, 2, 4 or 8 GiB per cpu, capped at 512 GiB). Pods
// have no constraints; their labels name one of eight jobs.
func GPU(n int) []*corev1.Pod {
	g := newGenerator()
	gpuCounts := [...]int64{0, 0, 1, 1, 1, 1, 2, 2, 4, 8}
	cpuPerGPU := [...]int64{1, 2, 4, 8}
	memPerCPU := [...]int64{1, 2, 4, 8}
	pods := make([]*corev1.Pod, 0, n)
	for range n {
		gpus := gpuCounts[g.rng.Intn(len(gpuCounts))]
		cpu := cpuPerGPU[g.rng.Intn(len(cpuPerGPU))] * max(gpus, 1)
		if gpus == 0 {
			cpu = 1 + g.rng.Int63n(16)
		}
		cpu = min(cpu, 64)
		mem := min(cpu*memPerCPU[g.rng.Intn(len(memPerCPU))], 512)
		job := fmt.Sprintf("job-%d", g.rng.Intn(8))
		g.n++
		requests := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(mem<<30, resource.BinarySI),
		}
		if gpus > 0 {
			requests[ResourceNvidiaGPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
		}
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gpu-%d", g.n), Namespace: "default", Labels: map[string]string{"job": job}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Resources: corev1.ResourceRequirements{Requests: requests, Limits: gpuLimits(gpus)},
			}}},
		})
	}
	return pods
}

// gpuLimits sets the GPU limit equal to the request, as extended resources require.
func gpuLimits(gpus int64) corev1.ResourceList {
	if gpus == 0 {
		return nil
	}
	return corev1.ResourceList{ResourceNvidiaGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}
}
