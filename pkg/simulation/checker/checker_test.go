package checker_test

import (
	"context"
	"strings"
	"testing"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/checker"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/workload"
)

func benchmarkInput(n int) solver.Input {
	return solver.Input{Pods: workload.Diverse(n), NodePools: []*v1.NodePool{workload.NodePool()},
		InstanceTypes: map[string]cloudprovider.InstanceTypes{"default": catalog.KarpenterBenchmark()}}
}

func solve(t *testing.T, in solver.Input) *solver.Plan {
	t.Helper()
	plan, err := solver.Solve(context.Background(), in, solver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func TestAcceptsSolverPlan(t *testing.T) {
	in := benchmarkInput(300)
	plan := solve(t, in)
	if err := checker.Check(in, plan, checker.Options{}); err != nil {
		t.Fatalf("valid plan rejected:\n%v", err)
	}
}

func TestDetectsCorruption(t *testing.T) {
	in := benchmarkInput(100)
	cases := []struct {
		name    string
		corrupt func(p *solver.Plan)
		want    string
	}{
		{"dropped pod", func(p *solver.Plan) {
			p.NodeClaims[0].Pods = p.NodeClaims[0].Pods[1:]
			p.NodeClaims[0].Sequences = p.NodeClaims[0].Sequences[1:]
		}, "appears 0 times"},
		{"wrong price", func(p *solver.Plan) { p.PricePerHour += 1 }, "not the sum"},
		{"too small type", func(p *solver.Plan) {
			p.NodeClaims[0].InstanceTypes = catalog.KarpenterBenchmark()[:1]
		}, "don't fit"},
		{"anti-affinity broken", func(p *solver.Plan) {
			// Move every pod onto the first claim: nginx pods then share a host.
			first := &p.NodeClaims[0]
			for i := 1; i < len(p.NodeClaims); i++ {
				first.Pods = append(first.Pods, p.NodeClaims[i].Pods...)
				first.Sequences = append(first.Sequences, p.NodeClaims[i].Sequences...)
				p.NodeClaims[i].Pods, p.NodeClaims[i].Sequences = nil, nil
			}
		}, "anti-affinity"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := solve(t, in)
			tc.corrupt(plan)
			err := checker.Check(in, plan, checker.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
