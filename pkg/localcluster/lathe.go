package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-logr/logr"

	"github.com/lathe-autoscaler/lathe/pkg/loopback"
)

// LatheOptions configures StartLathe.
type LatheOptions struct {
	// Binary is the Lathe controller binary, as make build writes it to bin/lathe.
	Binary string
	// Kubeconfig is the kubeconfig Lathe connects with, usually Cluster.Kubeconfig().
	Kubeconfig string
	// ClusterName is passed as CLUSTER_NAME.
	ClusterName string
	// Env is added to Lathe's environment after the variables StartLathe sets, so it can override them
	// (for example DISABLE_LEADER_ELECTION=false, or LOG_LEVEL).
	Env []string
	// Logs receives Lathe's output, one line at a time, prefixed with "[lathe] ". Nil discards it.
	Logs io.Writer
	// ReadyTimeout bounds the wait for Lathe's health probe server. Defaults to 2 minutes.
	ReadyTimeout time.Duration
	// StopGracePeriod is how long Stop waits after SIGTERM before it sends SIGKILL. Defaults to 15s.
	StopGracePeriod time.Duration
}

// Lathe is a running Lathe controller process.
type Lathe struct {
	*Process
	// MetricsPort and HealthProbePort are the loopback ports Lathe was told to serve on.
	MetricsPort, HealthProbePort int
}

// StartLathe runs the Lathe binary on free loopback metrics and health probe ports, with leader election
// off, and returns once its health probe server answers. Stop it with Stop.
func StartLathe(ctx context.Context, opts LatheOptions) (*Lathe, error) {
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = defaultReadyTimeout
	}
	if opts.StopGracePeriod <= 0 {
		opts.StopGracePeriod = defaultStopGracePeriod
	}
	if err := checkExecutable(opts.Binary, "run 'make build' to build it"); err != nil {
		return nil, err
	}
	ports, err := loopback.FreePorts(2)
	if err != nil {
		return nil, err
	}
	env := append([]string{
		"KUBECONFIG=" + opts.Kubeconfig,
		"CLUSTER_NAME=" + opts.ClusterName,
		"METRICS_PORT=" + strconv.Itoa(ports[0]),
		"HEALTH_PROBE_PORT=" + strconv.Itoa(ports[1]),
		"DISABLE_LEADER_ELECTION=true",
	}, opts.Env...)
	p, err := startProcess(command{
		name: "lathe", path: opts.Binary, env: env,
		logs: newSyncWriter(opts.Logs), grace: opts.StopGracePeriod,
	})
	if err != nil {
		return nil, err
	}
	l := &Lathe{Process: p, MetricsPort: ports[0], HealthProbePort: ports[1]}
	// The health probe server answers /healthz once the manager runs. A 404 means it runs without a
	// liveness check registered, which is up all the same.
	url := "http://" + hostPort(l.HealthProbePort) + "/healthz"
	check := statusCheck(&http.Client{Timeout: readyRequestTimeout}, url, http.StatusOK, http.StatusNotFound)
	if err := waitFor(ctx, "lathe to serve its health probe", opts.ReadyTimeout, check, p); err != nil {
		return nil, fmt.Errorf("starting lathe, %w", errors.Join(err, p.Stop()))
	}
	logr.FromContextOrDiscard(ctx).Info("Lathe ready", "pid", p.PID(), "metricsPort", l.MetricsPort, "healthProbePort", l.HealthProbePort)
	return l, nil
}
