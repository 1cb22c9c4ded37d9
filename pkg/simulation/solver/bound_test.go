package solver_test

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

const gpuResource corev1.ResourceName = "nvidia.com/gpu"

// gpuType is instanceType with gpus nvidia.com/gpu added, priced on top of its cpu.
func gpuType(name string, cpu, gpus int64, pricePerGPU float64) *cloudprovider.InstanceType {
	it := instanceType(name, "amd64", cpu, 0.05*float64(cpu)+pricePerGPU*float64(gpus))
	it.Capacity[gpuResource] = *resource.NewQuantity(gpus, resource.DecimalSI)
	return it
}

func withGPUs(n int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[gpuResource] = *resource.NewQuantity(n, resource.DecimalSI)
	}
}

// gpuInput is the small catalog plus GPU types of 1, 4 and 8 GPUs.
func gpuInput(ps []*corev1.Pod) solver.Input {
	in := input(ps, nodePool("default"))
	in.InstanceTypes["default"] = append(smallCatalog(), gpuType("g-1", 8, 1, 1), gpuType("g-4", 32, 4, 0.9), gpuType("g-8", 64, 8, 0.95))
	return in
}

// TestLowerBoundCountsGPUs: a pod needing 8 GPUs and little cpu must be bounded by the GPUs' price, not
// its cpu's.
func TestLowerBoundCountsGPUs(t *testing.T) {
	plan := solveChecked(t, gpuInput([]*corev1.Pod{pod("train", "1", "1Gi", withGPUs(8))}), solver.Options{})
	// The cheapest GPU is g-4's: (32 × 0.05 + 4 × 0.9) / 4 per GPU on demand, 0.4 of that on spot.
	perGPU := 0.4 * (32*0.05 + 4*0.9) / 4
	if plan.LowerBoundPerHour < 8*perGPU-1e-9 {
		t.Fatalf("lower bound %.4f, want at least 8 GPUs at %.4f", plan.LowerBoundPerHour, perGPU)
	}
	if plan.LowerBoundPerHour > plan.MixLowerBoundPerHour+1e-9 || plan.MixLowerBoundPerHour > plan.PricePerHour+1e-9 {
		t.Fatalf("bounds %.4f, %.4f above price %.4f", plan.LowerBoundPerHour, plan.MixLowerBoundPerHour, plan.PricePerHour)
	}
}

// TestLowerBoundsSoundOnGPUWorkloads: on random mixes of GPU and cpu pods no bound exceeds the plan's cost.
func TestLowerBoundsSoundOnGPUWorkloads(t *testing.T) {
	for seed := int64(0); seed < 60; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var ps []*corev1.Pod
		for i := range 1 + rng.Intn(40) {
			cpu := fmt.Sprintf("%dm", 100+rng.Intn(6000))
			mem := fmt.Sprintf("%dMi", 100+rng.Intn(12000))
			var mutate []func(*corev1.Pod)
			if g := []int64{0, 0, 1, 2, 4, 8}[rng.Intn(6)]; g > 0 {
				mutate = append(mutate, withGPUs(g))
			}
			ps = append(ps, pod(fmt.Sprintf("p-%d", i), cpu, mem, mutate...))
		}
		plan := solveChecked(t, gpuInput(ps), solver.Options{})
		if len(plan.Unschedulable) > 0 {
			t.Fatalf("seed %d: %d pods unplaced", seed, len(plan.Unschedulable))
		}
		if plan.LowerBoundPerHour > plan.MixLowerBoundPerHour+1e-9 || plan.MixLowerBoundPerHour > plan.PricePerHour+1e-9 {
			t.Fatalf("seed %d: bounds %.4f, %.4f above price %.4f", seed, plan.LowerBoundPerHour, plan.MixLowerBoundPerHour, plan.PricePerHour)
		}
	}
}

// TestMixBoundNeverAboveOptimum compares the mix bound with the cheapest packing found by trying every
// type for a single pod: one pod's optimum is the cheapest type that holds it.
func TestMixBoundNeverAboveOptimum(t *testing.T) {
	for _, g := range []int64{0, 1, 3, 8} {
		plan := solveChecked(t, gpuInput([]*corev1.Pod{pod("one", "2", "3Gi", withGPUs(g))}), solver.Options{})
		if plan.MixLowerBoundPerHour > plan.PricePerHour+1e-9 {
			t.Fatalf("%d GPUs: mix bound %.4f above the single cheapest type %.4f", g, plan.MixLowerBoundPerHour, plan.PricePerHour)
		}
	}
}
