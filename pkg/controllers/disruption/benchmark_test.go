package disruption_test

import (
	"context"
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"runtime"
	"syscall"
	"testing"
	"time"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// benchmarkView is n identical 16-vCPU nodes, each with ten pods using 34 % of its cpu, all
// consolidatable: the shape of Karpenter's consolidation scale test.
func benchmarkView(n int) *disruption.View {
	nodes := make([]*state.StateNode, n)
	for i := range nodes {
		name := fmt.Sprintf("node-%05d", i)
		var pods []*corev1.Pod
		for j := range 10 {
			pods = append(pods, pod(fmt.Sprintf("%s-p%d", name, j), "544m"))
		}
		nodes[i] = node(name, 16, v1.CapacityTypeOnDemand, pods...)
	}
	return view(pool(), catalog(2, 4, 8, 16, 32), nodes...)
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkConsolidationDecision measures one disruption pass (every method in order, until one
// decides) over a snapshot.
func BenchmarkConsolidationDecision(b *testing.B) {
	for _, n := range []int{500, 2000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			v := benchmarkView(n)
			methods := disruption.Methods(false, solver.Options{})
			runtime.GC() // the view's garbage is not the decision's
			b.ResetTimer()
			cpuBefore := cpuTime()
			for range b.N {
				out, err := disruption.Decide(context.Background(), v, methods)
				if err != nil {
					b.Fatal(err)
				}
				if d := out.Decided(); d == nil {
					b.Fatal("no decision")
				} else {
					b.ReportMetric(float64(len(d.Command.Candidates)), "candidates")
					b.ReportMetric(float64(len(d.Command.Replacements)), "replacements")
				}
			}
			// CPU seconds per decision (all goroutines), which a machine shared with other work does not
			// inflate the way it inflates ns/op.
			b.ReportMetric((cpuTime()-cpuBefore).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}
