package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/localcluster"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/monitoring"
)

// TestDashboardsAndAlertsOnPrometheus runs the tutorial while a real Prometheus (Debian's build, bin/prometheus)
// scrapes Lathe every second and evaluates the chart's alert rules: inflate.yaml on the getting-started
// NodePool scaled up, then down so consolidation replaces the node, then an interruption of the node left.
// Afterwards every dashboard query, with Grafana's variables at "All", must return data, and every alert
// rule must have evaluated without error.
func TestDashboardsAndAlertsOnPrometheus(t *testing.T) {
	start := time.Now()
	prom := startPrometheus(t)
	ns := namespace(t, "tutorial")
	applyInflate(t, ns)
	scale(t, ns, "inflate", 5)
	runningPods(t, ns, "inflate", 5, 2*time.Minute)
	scale(t, ns, "inflate", 1)
	// The tutorial NodePool consolidates after 1m; one c/m/r node for a 1-CPU pod is then replaced.
	eventually(t, 4*time.Minute, "consolidation to disrupt a node", promHas(prom, `karpenter_nodeclaims_disrupted_total{reason=~"underutilized|empty"}`))
	node := settledNode(t, ns, 3*time.Minute)
	interrupt(t, node, sim.InterruptionScheduledChange)
	eventually(t, 2*time.Minute, "the interruption to disrupt the node", promHas(prom, `karpenter_nodeclaims_disrupted_total{reason="scheduled_change"}`))
	if replacement := settledNode(t, ns, 3*time.Minute); replacement == node {
		t.Fatalf("the inflate pod still runs on the interrupted node %s", node)
	}

	dashboards, err := monitoring.LoadDashboards(repoRoot())
	if err != nil {
		t.Fatal(err)
	}
	builtins := monitoring.Builtins()
	builtins["__range"] = strconv.Itoa(int(time.Since(start).Seconds())+60) + "s"
	var queries []string
	var names []monitoring.Query
	for _, d := range dashboards {
		vals, err := d.Values(builtins)
		if err != nil {
			t.Fatal(err)
		}
		vars, err := d.VariableQueries()
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range append(d.Queries(), vars...) {
			expr, err := monitoring.Expand(q.Expr, vals)
			if err != nil {
				t.Fatal(err)
			}
			queries, names = append(queries, expr), append(names, q)
		}
	}
	// Every series is there after a scrape or two; rates need two samples. Stop on an error (a query
	// Prometheus rejects), or when every query has data, or after 30s, then name the empty ones.
	var empty []monitoring.Query
	err = wait.PollUntilContextTimeout(context.Background(), time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		empty = nil
		for i, expr := range queries {
			n, err := promQuery(ctx, prom, expr)
			if err != nil {
				return false, fmt.Errorf("%s: %w", names[i], err)
			}
			if n == 0 {
				empty = append(empty, names[i])
			}
		}
		return len(empty) == 0, nil
	})
	if err != nil && len(empty) == 0 {
		t.Fatal(err)
	}
	for _, q := range empty {
		t.Errorf("%s returned no data: %s", q, q.Expr)
	}
	checkRules(t, prom)
}

// startPrometheus starts bin/prometheus scraping Lathe every second and evaluating the chart's alert rules;
// the test's cleanup stops it.
func startPrometheus(t *testing.T) *localcluster.Prometheus {
	t.Helper()
	binDir, err := environment.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	prom, err := localcluster.StartPrometheus(context.Background(), localcluster.PrometheusOptions{
		Binary:    filepath.Join(binDir, "prometheus"),
		WorkDir:   t.TempDir(),
		Targets:   []string{fmt.Sprintf("127.0.0.1:%d", s.lathe.MetricsPort)},
		RuleFiles: []string{filepath.Join(repoRoot(), monitoring.RulesFile)},
		Logs:      s.logs,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := prom.Stop(); err != nil {
			t.Errorf("stopping prometheus: %v", err)
		}
	})
	return prom
}

// applyInflate creates the tutorial's examples/inflate.yaml (0 replicas) in the namespace.
func applyInflate(t *testing.T, ns string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "inflate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(b, d); err != nil {
		t.Fatal(err)
	}
	d.Namespace = ns
	if err := s.kubeClient.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// settledNode waits until the namespace's one inflate pod runs on the only Lathe node left and returns
// that node's name.
func settledNode(t *testing.T, ns string, timeout time.Duration) string {
	t.Helper()
	var node string
	eventually(t, timeout, "one inflate pod running on the only node", func(ctx context.Context) (bool, error) {
		var nodes corev1.NodeList
		if err := s.kubeClient.List(ctx, &nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
			return false, err
		}
		var pods corev1.PodList
		if err := s.kubeClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": "inflate"}); err != nil {
			return false, err
		}
		if len(nodes.Items) != 1 || len(pods.Items) != 1 || !nodes.Items[0].DeletionTimestamp.IsZero() {
			return false, nil
		}
		node = nodes.Items[0].Name
		p := pods.Items[0]
		return p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == node, nil
	})
	return node
}

// interrupt annotates the node as `kubectl annotate node <name> sim.lathe.sh/interrupt=<kind>` does.
func interrupt(t *testing.T, name string, kind sim.InterruptionKind) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{}
	if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[sim.InterruptAnnotationKey] = string(kind)
	if err := s.kubeClient.Patch(ctx, node, patch); err != nil {
		t.Fatal(err)
	}
}

// promHas is a condition for eventually: the instant query returns data.
func promHas(prom *localcluster.Prometheus, expr string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		n, err := promQuery(ctx, prom, expr)
		return n > 0, err
	}
}

// promResponse is the envelope of Prometheus's HTTP API.
type promResponse struct {
	Status    string          `json:"status"`
	Error     string          `json:"error"`
	ErrorType string          `json:"errorType"`
	Data      json.RawMessage `json:"data"`
}

// promGet calls Prometheus's HTTP API and decodes the data of a successful answer into out.
func promGet(ctx context.Context, prom *localcluster.Prometheus, path string, params url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, prom.URL+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r promResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("GET %s: %s, %w", path, resp.Status, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("GET %s: %s: %s %s", path, resp.Status, r.ErrorType, r.Error)
	}
	return json.Unmarshal(r.Data, out)
}

// promQuery runs an instant query now and returns how many samples or series it returned.
func promQuery(ctx context.Context, prom *localcluster.Prometheus, expr string) (int, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := promGet(ctx, prom, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return 0, err
	}
	if data.ResultType == "scalar" || data.ResultType == "string" {
		return 1, nil
	}
	var result []json.RawMessage
	if err := json.Unmarshal(data.Result, &result); err != nil {
		return 0, err
	}
	return len(result), nil
}

// promRule is a rule as GET /api/v1/rules reports it.
type promRule struct {
	Name      string `json:"name"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

// checkRules waits until Prometheus has evaluated every rule of the chart's rules file and fails the test for
// each one that is not healthy.
func checkRules(t *testing.T, prom *localcluster.Prometheus) {
	t.Helper()
	want, err := monitoring.LoadRules(repoRoot())
	if err != nil {
		t.Fatal(err)
	}
	var rules []promRule
	eventually(t, 30*time.Second, "prometheus to evaluate every alert rule", func(ctx context.Context) (bool, error) {
		var data struct {
			Groups []struct {
				Rules []promRule `json:"rules"`
			} `json:"groups"`
		}
		if err := promGet(ctx, prom, "/api/v1/rules", nil, &data); err != nil {
			return false, err
		}
		rules = nil
		for _, g := range data.Groups {
			rules = append(rules, g.Rules...)
		}
		for _, r := range rules {
			if r.Health == "unknown" {
				return false, nil
			}
		}
		return len(rules) == len(want), nil
	})
	for _, r := range rules {
		if r.Health != "ok" || r.LastError != "" {
			t.Errorf("alert %s: health %q, last error %q", r.Name, r.Health, r.LastError)
		}
	}
}
