package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lathe-autoscaler/lathe/pkg/loopback"
)

// PrometheusOptions configures StartPrometheus.
type PrometheusOptions struct {
	// Binary is the prometheus server binary (make test-tools puts Debian's build in bin/prometheus).
	Binary string
	// WorkDir holds the configuration and the TSDB; the caller removes it.
	WorkDir string
	// Targets are the host:port addresses scraped for /metrics, as one job named "lathe".
	Targets []string
	// RuleFiles are the rules files Prometheus loads and evaluates.
	RuleFiles []string
	// Interval is both the scrape and the rule evaluation interval. Defaults to 1s.
	Interval time.Duration
	// Logs receives Prometheus's output, prefixed with "[prometheus] ". Nil discards it.
	Logs io.Writer
}

// Prometheus is a running Prometheus server.
type Prometheus struct {
	*Process
	// URL is the server's base address, http://127.0.0.1:<port>.
	URL string
}

// StartPrometheus runs a Prometheus server on a free loopback port that scrapes the targets and evaluates
// the rule files every Interval, and returns once it is ready to serve queries. Stop it with Stop.
func StartPrometheus(ctx context.Context, opts PrometheusOptions) (*Prometheus, error) {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if err := checkExecutable(opts.Binary, "run 'make test-tools' to fetch it"); err != nil {
		return nil, err
	}
	config := filepath.Join(opts.WorkDir, "prometheus.yml")
	if err := os.WriteFile(config, prometheusConfig(opts), 0o600); err != nil {
		return nil, fmt.Errorf("writing prometheus configuration, %w", err)
	}
	ports, err := loopback.FreePorts(1)
	if err != nil {
		return nil, err
	}
	p, err := startProcess(command{
		name: "prometheus", path: opts.Binary, logs: newSyncWriter(opts.Logs), grace: defaultStopGracePeriod,
		args: []string{
			"--config.file=" + config,
			"--storage.tsdb.path=" + filepath.Join(opts.WorkDir, "data"),
			"--web.listen-address=" + hostPort(ports[0]),
			"--log.level=warn",
		},
	})
	if err != nil {
		return nil, err
	}
	prom := &Prometheus{Process: p, URL: "http://" + hostPort(ports[0])}
	check := statusCheck(&http.Client{Timeout: readyRequestTimeout}, prom.URL+"/-/ready", http.StatusOK)
	if err := waitFor(ctx, "prometheus to be ready", defaultReadyTimeout, check, p); err != nil {
		return nil, fmt.Errorf("starting prometheus, %w", errors.Join(err, p.Stop()))
	}
	return prom, nil
}

// prometheusConfig is the server's configuration file. Every value is quoted, so it is valid YAML for any
// path or address.
func prometheusConfig(opts PrometheusOptions) []byte {
	interval := strconv.Quote(fmt.Sprintf("%dms", opts.Interval.Milliseconds()))
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\n", interval, interval, interval)
	b.WriteString("rule_files:\n")
	for _, f := range opts.RuleFiles {
		fmt.Fprintf(&b, "  - %s\n", strconv.Quote(f))
	}
	b.WriteString("scrape_configs:\n  - job_name: lathe\n    static_configs:\n      - targets:\n")
	for _, t := range opts.Targets {
		fmt.Fprintf(&b, "          - %s\n", strconv.Quote(t))
	}
	return []byte(b.String())
}
