// Package operator builds and runs Lathe's controller-runtime manager: the Kubernetes client and informer cache,
// leader election on a Lease, the /metrics server and the /healthz and /readyz probes.
//
// main builds an Operator from options and a logger, lets the composition root add controllers, then calls Run:
//
//	op, err := operator.New(opts, operator.Deps{Logger: logger, Version: version})
//	...
//	if err := op.AddController(myController.Register); err != nil { ... }
//	err = op.Run(ctx) // returns once ctx is cancelled and the manager has stopped
//
// # Leader election
//
// Unless DISABLE_LEADER_ELECTION is set, replicas compete for a coordination.k8s.io Lease named
// LEADER_ELECTION_NAME in LEADER_ELECTION_NAMESPACE. Controllers (and any runnable that doesn't say otherwise)
// run only on the leader. On a clean shutdown the leader empties the Lease's holder so another replica takes
// over at once instead of waiting for the lease to expire.
//
// # Metrics
//
// /metrics on METRICS_PORT serves controller-runtime's registry (controller_runtime_*, workqueue_*,
// rest_client_*, leader_election_master_status) together with the Operator's own Registry, which holds
// karpenter_build_info, the Go runtime and process collectors, and whatever controllers register in it.
//
// # Probes
//
// /healthz on HEALTH_PROBE_PORT answers as soon as the process serves HTTP. /readyz fails until the informer
// caches have started and synced.
package operator

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	kubeconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lathe-autoscaler/lathe/pkg/apis/scheme"
	"github.com/lathe-autoscaler/lathe/pkg/operator/options"
)

// Deps are what the Operator needs besides its options.
type Deps struct {
	// Logger receives the operator's and the manager's logs.
	Logger logr.Logger
	// RESTConfig reaches the API server. When nil it is loaded the way controller-runtime loads it: the
	// KUBECONFIG file, else the in-cluster service account, else $HOME/.kube/config.
	RESTConfig *rest.Config
	// Version and Commit label karpenter_build_info and the start-up log line.
	Version string
	Commit  string
}

// Operator is a configured manager that has not started yet.
type Operator struct {
	// Manager is the controller-runtime manager. Controllers register with it before Run.
	Manager manager.Manager
	// Registry is where Lathe's own metrics are registered; it is served on /metrics.
	Registry prometheus.Registerer

	opts   *options.Options
	logger logr.Logger
	deps   Deps
}

// New builds the manager from opts. It doesn't contact the API server; Run does. It already binds the health
// probe port, so a port in use is reported here. When MEMORY_LIMIT is set it also sets the process's Go soft
// memory limit to 90% of it.
func New(opts *options.Options, deps Deps) (*Operator, error) {
	logger := deps.Logger.WithName("operator")
	restConfig, err := clientConfig(opts, deps)
	if err != nil {
		return nil, err
	}
	s, err := scheme.New()
	if err != nil {
		return nil, fmt.Errorf("building scheme, %w", err)
	}
	registry, err := newRegistry(deps.Version, deps.Commit)
	if err != nil {
		return nil, err
	}
	mgr, err := manager.New(restConfig, manager.Options{
		Scheme: s,
		Logger: deps.Logger,
		// Lathe serves /metrics itself so that its own registry is served next to controller-runtime's.
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        bindAddress(opts.HealthProbePort),
		LeaderElection:                !opts.DisableLeaderElection,
		LeaderElectionResourceLock:    resourcelock.LeasesResourceLock,
		LeaderElectionID:              opts.LeaderElectionName,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    ctrlconfig.Controller{EnableWarmup: ptr.To(!opts.DisableControllerWarmup)},
		BaseContext:                   func() context.Context { return logr.NewContext(context.Background(), deps.Logger) },
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager, %w", err)
	}
	o := &Operator{Manager: mgr, Registry: registry, opts: opts, logger: logger, deps: deps}
	if err := o.addServers(registry); err != nil {
		return nil, err
	}
	if limit, ok := opts.SoftMemoryLimit(); ok {
		debug.SetMemoryLimit(limit)
		logger.Info("memory limit set", "memoryLimit", opts.MemoryLimit, "goMemoryLimit", limit)
	}
	return o, nil
}

// AddController lets a controller register its watches and runnables with the manager. Call it before Run.
func (o *Operator) AddController(register func(manager.Manager) error) error {
	if err := register(o.Manager); err != nil {
		return fmt.Errorf("registering controller, %w", err)
	}
	return nil
}

// Run starts the manager and blocks until ctx is cancelled and every runnable has stopped, or until the
// manager fails. Once it starts it logs "controller started". Run may be called only once.
func (o *Operator) Run(ctx context.Context) error {
	if err := o.Manager.Start(ctx); err != nil {
		return fmt.Errorf("running manager, %w", err)
	}
	o.logger.Info("controller stopped")
	return nil
}

// addServers adds the probes, the metrics server and the start-up announcement to the manager.
func (o *Operator) addServers(registry *prometheus.Registry) error {
	if err := o.Manager.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding healthz check, %w", err)
	}
	if err := o.Manager.AddReadyzCheck("informer-cache", cacheSynced(o.Manager.GetCache())); err != nil {
		return fmt.Errorf("adding readyz check, %w", err)
	}
	if o.opts.MetricsPort != 0 {
		server := &metricsServer{
			address: bindAddress(o.opts.MetricsPort),
			handler: metricsHandler(registry, o.opts.EnableProfiling),
			logger:  o.logger,
		}
		if err := o.Manager.Add(server); err != nil {
			return fmt.Errorf("adding metrics server, %w", err)
		}
	}
	if err := o.Manager.Add(&announcer{operator: o}); err != nil {
		return fmt.Errorf("adding start-up announcement, %w", err)
	}
	return nil
}

// clientConfig loads the REST config unless one was given and applies the client rate limits.
func clientConfig(opts *options.Options, deps Deps) (*rest.Config, error) {
	cfg := deps.RESTConfig
	if cfg == nil {
		loaded, err := kubeconfig.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig, %w", err)
		}
		cfg = loaded
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = float32(opts.KubeClientQPS)
	cfg.Burst = opts.KubeClientBurst
	cfg.UserAgent = "lathe/" + deps.Version
	return cfg, nil
}

// bindAddress turns a port into a listen address on every interface; port 0 gives "0", which disables the
// server.
func bindAddress(port int) string {
	if port == 0 {
		return "0"
	}
	return ":" + strconv.Itoa(port)
}

// announcer logs once the manager has started, and again once this replica leads. It doesn't need the lease.
type announcer struct {
	operator *Operator
}

func (a *announcer) NeedLeaderElection() bool { return false }

func (a *announcer) Start(ctx context.Context) error {
	o := a.operator
	o.logger.Info("controller started",
		"version", o.deps.Version,
		"commit", o.deps.Commit,
		"goVersion", runtime.Version(),
		"clusterName", o.opts.ClusterName,
		"cloudProvider", o.opts.CloudProvider,
		"featureGates", o.opts.FeatureGates.String(),
		"leaderElection", !o.opts.DisableLeaderElection,
	)
	if o.opts.DisableLeaderElection {
		return nil
	}
	select {
	case <-ctx.Done():
	case <-o.Manager.Elected():
		o.logger.Info("leader elected", "Lease", klog.KRef(o.opts.LeaderElectionNamespace, o.opts.LeaderElectionName))
	}
	return nil
}
