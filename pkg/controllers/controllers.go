// Package controllers is Lathe's composition root: it builds the objects controllers share (cloud provider,
// event recorder, provisioner) once, and registers every controller with the manager. Which controllers
// run is decided here and nowhere else.
package controllers

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/interruption"
	nodemetrics "github.com/lathe-autoscaler/lathe/pkg/controllers/metrics/node"
	podmetrics "github.com/lathe-autoscaler/lathe/pkg/controllers/metrics/pod"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/metrics/status"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/node/health"
	nodetermination "github.com/lathe-autoscaler/lathe/pkg/controllers/node/termination"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/consolidatable"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/drift"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/expiration"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/lifecycle"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/podevents"
	nodeclaimtermination "github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/termination"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodepool/counter"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodepool/hash"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodepool/readiness"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodepool/static"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/pod/nomination"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/operator/options"
	awsprovider "github.com/lathe-autoscaler/lathe/pkg/providers/aws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/state"
	"github.com/lathe-autoscaler/lathe/pkg/state/informer"
)

// Deps are what the controllers are built from.
type Deps struct {
	Manager  manager.Manager
	Registry prometheus.Registerer
	Options  *options.Options
	Clock    clock.Clock
}

// controller is what every controller offers the composition root.
type controller interface {
	Register(ctx context.Context, mgr manager.Manager) error
}

// Register builds the cloud provider named by the options and registers every controller with the manager.
func Register(ctx context.Context, deps Deps) error {
	mgr := deps.Manager
	cloud, providerControllers, err := newCloudProvider(ctx, deps)
	if err != nil {
		return err
	}
	recorder := events.NewRecorder(mgr.GetEventRecorderFor("karpenter"), deps.Clock)
	measured := meter(cloud, deps.Registry)
	cluster := state.NewCluster(state.Deps{Reader: mgr.GetClient(), Clock: deps.Clock, Registerer: deps.Registry,
		NominationWindow: state.NominationWindow(deps.Options.BatchMaxDuration)})
	provisioner := provisioning.NewProvisioner(provisioning.Deps{
		Client:            mgr.GetClient(),
		Reader:            mgr.GetAPIReader(),
		Cluster:           cluster,
		CloudProvider:     measured("provisioner"),
		Clock:             deps.Clock,
		Recorder:          recorder,
		Registerer:        deps.Registry,
		BatchIdleDuration: deps.Options.BatchIdleDuration,
		BatchMaxDuration:  deps.Options.BatchMaxDuration,
		Scheduling:        cluster.Scheduling,
		PlanUntriedPods:   deps.Options.PlanUntriedPods,
		SolverOptions: solver.Options{
			PreferencePolicy: solver.PreferencePolicy(deps.Options.PreferencePolicy),
			MinValuesPolicy:  scheduling.MinValuesPolicy(deps.Options.MinValuesPolicy),
		},
	})
	all := providerControllers
	// Plan fidelity: tell the kube-scheduler where each pending pod was planned (KEP-5278), and make a new
	// Node schedulable only once it has been told.
	var hints lifecycle.Hints
	launches := lifecycle.NewLaunches(cluster.Nodes)
	if nominate, err := nominatedNodeNames(ctx, deps); err != nil {
		return err
	} else if nominate {
		nominator := nomination.NewController(nomination.Deps{Client: mgr.GetClient(), Nominations: cluster,
			Changes: cluster.NominationChanges(), Clock: deps.Clock, Launches: launches, Replanner: provisioner})
		hints = nominator
		all = append(all, nominator)
	}
	for _, c := range informer.NewControllers(mgr.GetClient(), cluster) {
		all = append(all, c)
	}
	all = append(all,
		provisioning.NewPodController(mgr.GetClient(), provisioner),
		provisioning.NewNodeController(mgr.GetClient(), provisioner),
		lifecycle.NewController(lifecycle.Deps{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), CloudProvider: measured("nodeclaim.lifecycle"), Clock: deps.Clock, Recorder: recorder, Registerer: deps.Registry, Hints: hints, Planner: provisioner, Launches: launches}),
		nodeclaimtermination.NewController(nodeclaimtermination.Deps{Client: mgr.GetClient(), CloudProvider: measured("nodeclaim.termination"), Clock: deps.Clock, Recorder: recorder, Registerer: deps.Registry}),
		nodetermination.NewController(nodetermination.Deps{Client: mgr.GetClient(), CloudProvider: measured("node.termination"), Clock: deps.Clock, Recorder: recorder, Registerer: deps.Registry}),
		counter.NewController(counter.Deps{Client: mgr.GetClient(), Cluster: cluster, Registerer: deps.Registry, CloudProvider: measured("nodepool.counter")}),
		readiness.NewController(readiness.Deps{Client: mgr.GetClient(), Clock: deps.Clock}),
		hash.NewController(hash.Deps{Client: mgr.GetClient()}),
		podmetrics.NewController(podmetrics.Deps{Client: mgr.GetClient(), Clock: deps.Clock, Registerer: deps.Registry, Scheduling: cluster.Scheduling}),
	)
	all = append(all, statusMetrics(status.Deps{Client: mgr.GetClient(), Clock: deps.Clock, Registerer: deps.Registry})...)
	all = append(all, nodemetrics.NewController(nodemetrics.Deps{Client: mgr.GetClient(), Clock: deps.Clock, Registerer: deps.Registry}))
	all = append(all, forcefulDisruption(deps, cloud, measured, cluster, recorder)...)
	// Voluntary disruption: pod events and the Consolidatable condition feed the disruption loop.
	all = append(all,
		podevents.NewController(podevents.Deps{Client: mgr.GetClient(), Clock: deps.Clock}),
		consolidatable.NewController(consolidatable.Deps{Client: mgr.GetClient(), Clock: deps.Clock}),
		disruption.NewController(disruption.Deps{
			Client: mgr.GetClient(), Cluster: cluster, Marker: cluster.Deletions, CloudProvider: measured("disruption"),
			Clock: deps.Clock, Recorder: recorder, Registerer: deps.Registry,
			SpotToSpotConsolidation: deps.Options.FeatureGates.SpotToSpotConsolidation,
			PlanUntriedPods:         deps.Options.PlanUntriedPods,
			SolverOptions: solver.Options{
				PreferencePolicy: solver.PreferencePolicy(deps.Options.PreferencePolicy),
				MinValuesPolicy:  scheduling.MinValuesPolicy(deps.Options.MinValuesPolicy),
			},
		}),
	)
	for _, c := range all {
		if err := c.Register(ctx, mgr); err != nil {
			return fmt.Errorf("registering %T, %w", c, err)
		}
	}
	return nil
}

// forcefulDisruption builds the controllers that replace nodes whatever the budgets: drift marking (the
// disruption loop acts on it), expiration, interruption (for providers that report it), garbage collection,
// static NodePools' replica count and node repair behind their feature gates.
func forcefulDisruption(deps Deps, cloud cloudprovider.CloudProvider, measured func(string) cloudprovider.CloudProvider, cluster *state.Cluster, recorder events.Recorder) []controller {
	kube := deps.Manager.GetClient()
	out := []controller{
		drift.NewController(drift.Deps{Client: kube, CloudProvider: measured("nodeclaim.drift"), Clock: deps.Clock}),
		expiration.NewController(expiration.Deps{Client: kube, Clock: deps.Clock, Recorder: recorder, Registerer: deps.Registry}),
		garbagecollection.NewController(garbagecollection.Deps{Client: kube, CloudProvider: measured("nodeclaim.garbagecollection"), Clock: deps.Clock, Registerer: deps.Registry}),
	}
	if source := interruptionSource(cloud); source != nil {
		out = append(out, interruption.NewController(interruption.Deps{Client: kube, Source: source, Clock: deps.Clock, Recorder: recorder, Registerer: deps.Registry}))
	}
	if source := healthSource(cloud); source != nil {
		out = append(out, interruption.NewHealthController(interruption.HealthDeps{Client: kube, Source: source, Clock: deps.Clock, Recorder: recorder, Registerer: deps.Registry}))
	}
	if deps.Options.FeatureGates.StaticCapacity {
		out = append(out, static.NewController(static.Deps{Client: kube, Cluster: cluster, CloudProvider: measured("nodepool.static"), Clock: deps.Clock}))
	}
	if deps.Options.FeatureGates.NodeRepair {
		out = append(out, health.NewController(health.Deps{Client: kube, CloudProvider: measured("node.health"), Clock: deps.Clock, Recorder: recorder, Registerer: deps.Registry}))
	}
	return out
}

// interruptionSource is where the provider learns of interruptions: the provider itself (sim), or the
// queue it was configured with (aws with INTERRUPTION_QUEUE); nil for none.
func interruptionSource(cloud cloudprovider.CloudProvider) cloudprovider.InterruptionSource {
	if configured, ok := cloud.(interface {
		InterruptionQueue() cloudprovider.InterruptionSource
	}); ok {
		return configured.InterruptionQueue()
	}
	source, _ := cloud.(cloudprovider.InterruptionSource)
	return source
}

// healthSource is where the provider finds unhealthy instances (aws: DescribeInstanceStatus); nil for none.
func healthSource(cloud cloudprovider.CloudProvider) cloudprovider.InstanceHealthSource {
	if provider, ok := cloud.(interface {
		InstanceHealth() cloudprovider.InstanceHealthSource
	}); ok {
		return provider.InstanceHealth()
	}
	source, _ := cloud.(cloudprovider.InstanceHealthSource)
	return source
}

// newCloudProvider builds the provider CLOUD_PROVIDER names, with the controllers that come with it.
func newCloudProvider(ctx context.Context, deps Deps) (cloudprovider.CloudProvider, []controller, error) {
	switch deps.Options.CloudProvider {
	case "sim":
		mgr := deps.Manager
		cloud, err := sim.New(sim.Deps{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Clock: deps.Clock, LaunchDelay: deps.Options.SimLaunchDelay,
			VMMemoryOverheadPercent: &deps.Options.VMMemoryOverheadPercent})
		if err != nil {
			return nil, nil, fmt.Errorf("creating simulated cloud provider, %w", err)
		}
		nodeClasses := sim.NewNodeClassController(sim.NodeClassDeps{Client: mgr.GetClient(), Clock: deps.Clock})
		interruptions := sim.NewInterruptionController(cloud, mgr.GetClient(), deps.Clock)
		return cloud, []controller{nodeClasses, interruptions}, nil
	case options.CloudProviderAWS:
		return newAWSProvider(ctx, deps)
	default:
		return nil, nil, fmt.Errorf("cloud provider %q is not available in this build (use CLOUD_PROVIDER=sim or aws)", deps.Options.CloudProvider)
	}
}

// newAWSProvider builds the AWS provider from the SDK's default chain, with its node class controllers.
func newAWSProvider(ctx context.Context, deps Deps) (cloudprovider.CloudProvider, []controller, error) {
	mgr, o := deps.Manager, deps.Options
	versions, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return nil, nil, fmt.Errorf("creating discovery client, %w", err)
	}
	cloud, controllers, err := awsprovider.NewFromEnvironment(ctx, awsprovider.EnvironmentDeps{
		Client: mgr.GetClient(), Discovery: versions, Clock: deps.Clock, Registerer: deps.Registry,
		Recorder: events.NewRecorder(mgr.GetEventRecorderFor("karpenter"), deps.Clock),
		Settings: awsprovider.Settings{ClusterName: o.ClusterName, ClusterEndpoint: o.ClusterEndpoint, ClusterCABundle: o.ClusterCABundle,
			VMMemoryOverheadPercent: o.VMMemoryOverheadPercent, ReservedCapacity: o.FeatureGates.ReservedCapacity,
			IsolatedVPC: o.IsolatedVPC, ReservedENIs: o.ReservedENIs, InterruptionQueue: o.InterruptionQueue},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating aws cloud provider, %w", err)
	}
	out := make([]controller, 0, len(controllers))
	for _, c := range controllers {
		out = append(out, c)
	}
	return cloud, out, nil
}
