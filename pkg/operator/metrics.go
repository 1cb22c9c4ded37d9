package operator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"sort"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

const (
	// shutdownTimeout bounds how long in-flight scrapes may run after the context is cancelled.
	shutdownTimeout = 10 * time.Second
)

// newRegistry returns a registry holding karpenter_build_info and the Go runtime and process collectors. Each
// Operator has its own, so nothing is registered in a process-wide registry and two Operators can coexist.
func newRegistry(version, commit string) (*prometheus.Registry, error) {
	registry := prometheus.NewRegistry()
	RegisterBuildInfo(registry, version, commit)
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := registry.Register(c); err != nil {
			return nil, fmt.Errorf("registering metrics, %w", err)
		}
	}
	return registry, nil
}

// RegisterBuildInfo registers karpenter_build_info on reg, set to 1 for this build.
func RegisterBuildInfo(reg prometheus.Registerer, version, commit string) {
	metrics.NewGauge(reg, prometheus.GaugeOpts{
		Namespace: metrics.Namespace,
		Name:      "build_info",
		Help:      "Always 1; the labels name the version, commit, Go version and architecture this Lathe binary was built from.",
	}, "version", "goversion", "goarch", "commit").WithLabelValues(version, runtime.Version(), runtime.GOARCH, commit).Set(1)
}

// metricsHandler serves /metrics from controller-runtime's registry and the Operator's, plus net/http/pprof
// under /debug/pprof/ when profiling is on.
func metricsHandler(registry *prometheus.Registry, profiling bool) http.Handler {
	mux := http.NewServeMux()
	gatherers := firstWins{crmetrics.Registry, registry}
	mux.Handle("/metrics", promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// firstWins gathers from each gatherer in turn and keeps the first family of each name. controller-runtime
// registers the Go runtime and process collectors in its registry as soon as a controller exists; the
// Operator's registry has them too, for the case where none does. Plain Gatherers would report the
// duplicate as an error and fail the whole scrape.
type firstWins []prometheus.Gatherer

func (g firstWins) Gather() ([]*dto.MetricFamily, error) {
	seen := map[string]bool{}
	var out []*dto.MetricFamily
	var errs prometheus.MultiError
	for _, gatherer := range g {
		families, err := gatherer.Gather()
		if err != nil {
			errs = append(errs, err)
		}
		for _, f := range families {
			if !seen[f.GetName()] {
				seen[f.GetName()] = true
				out = append(out, f)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, errs.MaybeUnwrap()
}

// metricsServer is a manager runnable that serves handler on address on every replica, leader or not.
type metricsServer struct {
	address string
	handler http.Handler
	logger  logr.Logger
}

func (s *metricsServer) NeedLeaderElection() bool { return false }

// Start serves until ctx is cancelled, then lets in-flight requests finish for up to shutdownTimeout.
func (s *metricsServer) Start(ctx context.Context) error {
	listener, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.address)
	if err != nil {
		return fmt.Errorf("listening for metrics on %s, %w", s.address, err)
	}
	server := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	s.logger.Info("serving metrics", "address", listener.Addr().String())

	select {
	case err := <-served:
		return fmt.Errorf("serving metrics, %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down metrics server, %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving metrics, %w", err)
	}
	return nil
}
