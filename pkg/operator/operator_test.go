package operator_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/lathe-autoscaler/lathe/pkg/loopback"
	"github.com/lathe-autoscaler/lathe/pkg/operator"
	"github.com/lathe-autoscaler/lathe/pkg/operator/logging"
	"github.com/lathe-autoscaler/lathe/pkg/operator/options"
)

// running is an Operator started in the background by start.
type running struct {
	op      *operator.Operator
	logPath string
	cancel  context.CancelFunc
	done    chan error
	once    sync.Once
	err     error
	// started is closed when a leader-only runnable added through AddController starts.
	started chan struct{}
}

// start parses vars like main does, builds the Operator against the test API server with its logs in a file,
// and runs it until the spec ends (or until stop).
func start(vars map[string]string) *running {
	GinkgoHelper()
	logPath := filepath.Join(GinkgoT().TempDir(), "lathe.log")
	vars["LOG_OUTPUT_PATHS"] = logPath
	opts, err := options.Parse(nil, func(key string) string { return vars[key] })
	Expect(err).NotTo(HaveOccurred())
	logger, flush, err := logging.New(logging.Config{Level: opts.LogLevel, OutputPaths: opts.LogOutputPaths})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(flush)

	op, err := operator.New(opts, operator.Deps{Logger: logger, RESTConfig: env.Config, Version: "v0.0.0-test", Commit: "abc123"})
	Expect(err).NotTo(HaveOccurred())
	r := &running{op: op, logPath: logPath, done: make(chan error, 1), started: make(chan struct{})}
	Expect(op.AddController(func(mgr manager.Manager) error {
		return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			close(r.started)
			<-ctx.Done()
			return nil
		}))
	})).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer GinkgoRecover()
		r.done <- op.Run(ctx)
	}()
	DeferCleanup(r.stop)
	return r
}

// stop cancels the Operator's context, waits for Run to return and returns its error. Calling it again returns
// the same error.
func (r *running) stop() error {
	GinkgoHelper()
	r.once.Do(func() {
		r.cancel()
		Eventually(r.done).WithTimeout(time.Minute).Should(Receive(&r.err))
	})
	return r.err
}

// logLines decodes the JSON lines written so far.
func (r *running) logLines() []map[string]any {
	GinkgoHelper()
	data, err := os.ReadFile(r.logPath)
	Expect(err).NotTo(HaveOccurred())
	var lines []map[string]any
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		var line map[string]any
		Expect(json.Unmarshal(scanner.Bytes(), &line)).To(Succeed(), "log line %q is not JSON", scanner.Text())
		lines = append(lines, line)
	}
	return lines
}

// freePort returns a loopback port that was free a moment ago.
func freePort() int {
	GinkgoHelper()
	ports, err := loopback.FreePorts(1)
	Expect(err).NotTo(HaveOccurred())
	return ports[0]
}

// get returns the status code and body of an HTTP GET, or an error if the server didn't answer.
func get(port int, path string) (int, string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func statusOf(port int, path string) func() (int, error) {
	return func() (int, error) {
		code, _, err := get(port, path)
		return code, err
	}
}

var _ = Describe("Operator", func() {
	It("holds the Lease, serves metrics and probes, and releases the Lease on shutdown", func(ctx SpecContext) {
		metricsPort, healthPort := freePort(), freePort()
		r := start(map[string]string{
			"CLUSTER_NAME":              "integration",
			"METRICS_PORT":              strconv.Itoa(metricsPort),
			"HEALTH_PROBE_PORT":         strconv.Itoa(healthPort),
			"LEADER_ELECTION_NAMESPACE": leaseNamespace,
		})

		By("taking the Lease")
		key := types.NamespacedName{Namespace: leaseNamespace, Name: "karpenter-leader-election"}
		lease := &coordinationv1.Lease{}
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, key, lease)).To(Succeed())
			g.Expect(lease.Spec.HolderIdentity).To(HaveValue(Not(BeEmpty())))
		}).WithTimeout(time.Minute).Should(Succeed())
		Eventually(r.started).WithTimeout(time.Minute).Should(BeClosed())

		By("answering the probes")
		Eventually(statusOf(healthPort, "/healthz")).WithTimeout(30 * time.Second).Should(Equal(http.StatusOK))
		Eventually(statusOf(healthPort, "/readyz")).WithTimeout(30 * time.Second).Should(Equal(http.StatusOK))

		By("serving Prometheus metrics")
		Eventually(func(g Gomega) {
			code, body, err := get(metricsPort, "/metrics")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(code).To(Equal(http.StatusOK))
			g.Expect(body).To(MatchRegexp(`(?m)^karpenter_build_info\{commit="abc123",goarch="[^"]+",goversion="go[^"]+",version="v0\.0\.0-test"\} 1$`))
			g.Expect(body).To(MatchRegexp(`(?m)^leader_election_master_status\{name="karpenter-leader-election"\} 1$`))
			g.Expect(body).To(ContainSubstring("rest_client_requests_total{"))
			g.Expect(body).To(ContainSubstring("# TYPE go_goroutines gauge"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		code, _, err := get(metricsPort, "/debug/pprof/")
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(http.StatusNotFound), "pprof is off unless ENABLE_PROFILING is set")

		By("logging the start")
		Eventually(r.logLines).Should(ContainElement(And(
			HaveKeyWithValue("message", "controller started"),
			HaveKeyWithValue("level", "INFO"),
			HaveKeyWithValue("logger", "operator"),
			HaveKeyWithValue("clusterName", "integration"),
			HaveKeyWithValue("version", "v0.0.0-test"),
			HaveKeyWithValue("leaderElection", true),
		)))
		Eventually(r.logLines).Should(ContainElement(HaveKeyWithValue("message", "leader elected")))

		By("stopping on cancel and giving up the Lease")
		Expect(r.stop()).To(Succeed())
		Expect(env.Client.Get(ctx, key, lease)).To(Succeed())
		Expect(lease.Spec.HolderIdentity).To(Or(BeNil(), HaveValue(BeEmpty())))
		Expect(r.logLines()).To(ContainElement(HaveKeyWithValue("message", "controller stopped")))
		_, _, err = get(metricsPort, "/metrics")
		Expect(err).To(HaveOccurred(), "the metrics server should be closed")
	})

	It("runs without a Lease when leader election is disabled, and applies MEMORY_LIMIT", func(ctx SpecContext) {
		previousLimit := debug.SetMemoryLimit(-1)
		DeferCleanup(debug.SetMemoryLimit, previousLimit)
		metricsPort := freePort()
		r := start(map[string]string{
			"MEMORY_LIMIT":              "10000000000",
			"CLUSTER_NAME":              "no-election",
			"DISABLE_LEADER_ELECTION":   "true",
			"LEADER_ELECTION_NAME":      "unused-lease",
			"LEADER_ELECTION_NAMESPACE": leaseNamespace,
			"METRICS_PORT":              strconv.Itoa(metricsPort),
			"HEALTH_PROBE_PORT":         "0",
			"ENABLE_PROFILING":          "true",
			"LOG_LEVEL":                 "error",
		})
		Expect(debug.SetMemoryLimit(-1)).To(BeEquivalentTo(9_000_000_000), "GOMEMLIMIT is 90% of MEMORY_LIMIT")
		Eventually(r.started).WithTimeout(time.Minute).Should(BeClosed())
		Eventually(statusOf(metricsPort, "/debug/pprof/")).WithTimeout(30 * time.Second).Should(Equal(http.StatusOK))

		err := env.Client.Get(ctx, types.NamespacedName{Namespace: leaseNamespace, Name: "unused-lease"}, &coordinationv1.Lease{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v, want NotFound", err)
		Expect(r.stop()).To(Succeed())
		Expect(r.logLines()).To(BeEmpty(), "LOG_LEVEL=error hides the info lines")
	})
})
