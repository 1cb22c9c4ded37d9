// Package informed runs, for tests, what production runs to keep a cluster view: a controller-runtime
// manager whose cache feeds the cluster-state informers (pkg/state/informer). Tests that drive
// controllers by hand get the same cached client and state the composition root wires.
package informed

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lathe-autoscaler/lathe/pkg/state"
	"github.com/lathe-autoscaler/lathe/pkg/state/informer"
)

// View is a running manager's cached client and the cluster state its informers keep.
type View struct {
	// Client reads from the cache and writes to the API server.
	Client client.Client
	// State is the cluster state.
	State *state.Cluster

	stop func()
}

// Start runs a manager against cfg with the cluster-state informers. Call Stop when done.
func Start(cfg *rest.Config, scheme *runtime.Scheme) (*View, error) {
	mgr, err := manager.New(cfg, manager.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		// Tests may start several views in one process; controller names need not be unique across them.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager, %w", err)
	}
	v := &View{Client: mgr.GetClient()}
	v.State = state.NewCluster(state.Deps{Reader: v.Client, Clock: clock.RealClock{}, Registerer: prometheus.NewRegistry()})
	ctx, cancel := context.WithCancel(context.Background())
	for _, c := range informer.NewControllers(v.Client, v.State) {
		if err := c.Register(ctx, mgr); err != nil {
			cancel()
			return nil, fmt.Errorf("registering %s, %w", c.Name(), err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	v.stop = func() { cancel(); <-done }
	return v, nil
}

// Stop stops the manager and waits for it.
func (v *View) Stop() { v.stop() }
