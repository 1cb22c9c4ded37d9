package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	cpmetrics "github.com/lathe-autoscaler/lathe/pkg/cloudprovider/metrics"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/interruption"
	nodemetrics "github.com/lathe-autoscaler/lathe/pkg/controllers/metrics/node"
	podmetrics "github.com/lathe-autoscaler/lathe/pkg/controllers/metrics/pod"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/metrics/status"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/node/health"
	nodetermination "github.com/lathe-autoscaler/lathe/pkg/controllers/node/termination"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/expiration"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/lifecycle"
	nodeclaimtermination "github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/termination"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodepool/counter"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instance"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/launchtemplate"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// meter returns a function that wraps cloud so that its calls are measured as the named controller's
// (karpenter_cloudprovider_*; one set of collectors on reg).
func meter(cloud cloudprovider.CloudProvider, reg prometheus.Registerer) func(controller string) cloudprovider.CloudProvider {
	collectors := cpmetrics.NewCollectors(reg)
	return func(controller string) cloudprovider.CloudProvider {
		return cpmetrics.Decorate(cloud, controller, collectors)
	}
}

// statusMetrics are the status condition metrics controllers of NodeClaims, NodePools, Nodes and
// EC2NodeClasses (operator_*).
func statusMetrics(deps status.Deps) []controller {
	return []controller{status.NodeClaims(deps), status.NodePools(deps), status.Nodes(deps), status.EC2NodeClasses(deps)}
}

// DescribeMetrics builds every component that owns metrics, without a cluster and on the given cloud provider
// (whose repair policies node repair reads when built), so that their collectors are created on reg; with a metrics.Catalog it lists every metric Lathe serves (hack/metricsdoc writes
// docs/metrics.txt and docs/metrics.md from it). Register builds the same components; the end-to-end test
// compares a running Lathe's /metrics with the generated list, so the two cannot drift apart unnoticed.
func DescribeMetrics(reg prometheus.Registerer, cloud cloudprovider.CloudProvider) {
	clk := clock.RealClock{}
	cluster := state.NewCluster(state.Deps{Clock: clk, Registerer: reg})
	cpmetrics.NewCollectors(reg)
	provisioning.NewProvisioner(provisioning.Deps{Cluster: cluster, Clock: clk, Registerer: reg})
	lifecycle.NewController(lifecycle.Deps{Clock: clk, Registerer: reg})
	nodeclaimtermination.NewController(nodeclaimtermination.Deps{Clock: clk, Registerer: reg})
	nodetermination.NewController(nodetermination.Deps{Clock: clk, Registerer: reg})
	counter.NewController(counter.Deps{Cluster: cluster, Registerer: reg})
	podmetrics.NewController(podmetrics.Deps{Clock: clk, Registerer: reg, Scheduling: cluster.Scheduling})
	expiration.NewController(expiration.Deps{Clock: clk, Registerer: reg})
	garbagecollection.NewController(garbagecollection.Deps{Clock: clk, Registerer: reg})
	interruption.NewController(interruption.Deps{Clock: clk, Registerer: reg})
	interruption.NewHealthController(interruption.HealthDeps{Clock: clk, Registerer: reg}) // providers with instance health (aws)
	health.NewController(health.Deps{CloudProvider: cloud, Clock: clk, Registerer: reg})
	disruption.NewController(disruption.Deps{Cluster: cluster, Clock: clk, Registerer: reg})
	statusMetrics(status.Deps{Clock: clk, Registerer: reg})
	nodemetrics.NewController(nodemetrics.Deps{Clock: clk, Registerer: reg})
	instance.NewMetrics(reg)             // the AWS provider's (CLOUD_PROVIDER=aws only)
	launchtemplate.NewUserDataBytes(reg) // the same
}
