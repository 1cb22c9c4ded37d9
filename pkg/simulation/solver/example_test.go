package solver_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

func ExampleSolve() {
	pool := nodePool("default")
	gpu := pod("trainer", "1", "1Gi", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"accelerator": "h100"} })
	in := solver.Input{
		Pods:          append(pods(4, "web", "1500m", "3Gi"), gpu),
		NodePools:     []*v1.NodePool{pool},
		InstanceTypes: map[string]cloudprovider.InstanceTypes{"default": catalog.KarpenterBenchmark()},
	}
	plan, err := solver.Solve(context.Background(), in, solver.Options{})
	if err != nil {
		panic(err)
	}
	for _, nc := range plan.NodeClaims {
		fmt.Printf("%s: %s in %s (%s), %d pods, $%.4f/h\n", nc.Name, nc.InstanceTypeNames[0], nc.Zone, nc.CapacityType, len(nc.Pods), nc.PricePerHour)
	}
	for _, u := range plan.Unschedulable {
		fmt.Printf("%s: %s\n", u.Pod, u.Reasons[0])
	}
	// Output:
	// default-0: fake-it-6 in test-zone-1 (on-demand), 4 pods, $2.2032/h
	// default/trainer: nodepool default: incompatible requirements, label "accelerator" does not have known values (requires In [h100])
}
