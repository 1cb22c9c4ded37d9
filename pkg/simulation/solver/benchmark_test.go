package solver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/workload"
)

// benchmarkSizes are the workload sizes Karpenter reports.
func benchmarkSizes() []int { return []int{1, 50, 100, 500, 1000, 2000, 5000, 10000, 20000} }

// runBenchmark solves the input b.N times and reports pods/s, nodes, $/h and cost over the fluid bound.
func runBenchmark(b *testing.B, pods []*corev1.Pod, its cloudprovider.InstanceTypes, opts solver.Options) {
	in := solver.Input{Pods: pods, NodePools: []*v1.NodePool{workload.NodePool()},
		InstanceTypes: map[string]cloudprovider.InstanceTypes{"default": its}}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var plan *solver.Plan
	for range b.N {
		var err error
		if plan, err = solver.Solve(context.Background(), in, opts); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(len(pods)*b.N)/elapsed.Seconds(), "pods/s")
	b.ReportMetric(float64(len(plan.NodeClaims)), "nodes")
	b.ReportMetric(plan.PricePerHour, "$/h")
	b.ReportMetric(plan.CostRatio(), "cost/bound")
	b.ReportMetric(plan.MixCostRatio(), "cost/mixbound")
	b.ReportMetric(float64(len(plan.Unschedulable)), "unschedulable")
}

// BenchmarkKarpenterDiverse is Karpenter's scheduling benchmark reproduced: diverse(N) on the 400-type fake
// catalog, one NodePool, an empty cluster.
func BenchmarkKarpenterDiverse(b *testing.B) {
	its := catalog.KarpenterBenchmark()
	for _, n := range benchmarkSizes() {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) { runBenchmark(b, workload.Diverse(n), its, solver.Options{}) })
	}
}

// BenchmarkEC2Diverse is the same pod mix on the embedded EC2 catalog, c, m and r families only.
func BenchmarkEC2Diverse(b *testing.B) {
	its, err := catalog.EC2(catalog.EC2Options{Categories: []string{"c", "m", "r"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range benchmarkSizes() {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) { runBenchmark(b, ec2Pods(n), its, solver.Options{}) })
	}
}

// BenchmarkEC2Alike is the getting-started inflate Deployment scaled up: identical 250m pods without
// constraints on the EC2 c, m and r families, where the cheapest plan uses large nodes.
func BenchmarkEC2Alike(b *testing.B) {
	its, err := catalog.EC2(catalog.EC2Options{Categories: []string{"c", "m", "r"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{10, 100, 1000, 5000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) { runBenchmark(b, workload.Alike(n, "250m"), its, solver.Options{}) })
	}
}

// ec2Pods is diverse(n) with zone keys left as they are: the EC2 catalog's zones are us-east-1a..c.
func ec2Pods(n int) []*corev1.Pod { return workload.Diverse(n) }

// BenchmarkPreference is Karpenter's preference(4000) workload, preferences respected and ignored.
func BenchmarkPreference(b *testing.B) {
	its := catalog.KarpenterBenchmark()
	for _, policy := range []solver.PreferencePolicy{solver.PreferenceRespect, solver.PreferenceIgnore} {
		b.Run(fmt.Sprintf("policy=%s", policy), func(b *testing.B) {
			runBenchmark(b, workload.Preference(4000), its, solver.Options{PreferencePolicy: policy})
		})
	}
}

// BenchmarkSelectorDiverse is diverse(N) where every pod also selects arch and os, the common case of pods
// carrying node requirements.
func BenchmarkSelectorDiverse(b *testing.B) {
	its := catalog.KarpenterBenchmark()
	for _, n := range []int{1000, 5000} {
		pods := workload.Diverse(n)
		for _, p := range pods {
			p.Spec.NodeSelector = map[string]string{v1.LabelArch: "amd64", v1.LabelOS: "linux"}
		}
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) { runBenchmark(b, pods, its, solver.Options{}) })
	}
}

// BenchmarkEC2GPU is a GPU cluster's mix (workload.GPU: most pods request 1–8 nvidia.com/gpu) on the whole
// embedded EC2 catalog, every family, spot and on-demand.
func BenchmarkEC2GPU(b *testing.B) {
	its, err := catalog.EC2(catalog.EC2Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) { runBenchmark(b, workload.GPU(n), its, solver.Options{}) })
	}
}

// BenchmarkEffectiveZones is the effective-zone pass the provisioner runs before each Solve, on the inputs
// of BenchmarkKarpenterDiverse (diverse(N) has zonal topology spreads, so the input is prepared).
func BenchmarkEffectiveZones(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			in := benchmarkInput(n)
			b.ReportAllocs()
			for range b.N {
				solver.EffectiveZones(in, solver.Options{})
			}
		})
	}
}
