package solver_test

import (
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/workload"
)

func benchmarkInput(n int) solver.Input {
	return solver.Input{Pods: workload.Diverse(n), NodePools: []*v1.NodePool{workload.NodePool()},
		InstanceTypes: map[string]cloudprovider.InstanceTypes{"default": catalog.KarpenterBenchmark()}}
}
