package monitoring_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lathe-autoscaler/lathe/pkg/test/monitoring"
)

// root is the repository root, three folders above this package.
var root = filepath.Join("..", "..", "..")

func TestExpandFillsGrafanaVariables(t *testing.T) {
	vals := map[string]string{"nodepool": ".*", "__rate_interval": "1m", "zone": "a|b"}
	got, err := monitoring.Expand(`rate(x{nodepool=~"$nodepool", zone=~"${zone:regex}", y=~"[[nodepool]]"}[$__rate_interval])`, vals)
	if err != nil {
		t.Fatal(err)
	}
	if want := `rate(x{nodepool=~".*", zone=~"a|b", y=~".*"}[1m])`; got != want {
		t.Errorf("Expand = %s, want %s", got, want)
	}
	if _, err := monitoring.Expand(`x{a=~"$nodepol"}`, vals); err == nil {
		t.Error("Expand of an unknown variable did not fail")
	}
}

func TestSelectorsNameEverySeriesAnExpressionReads(t *testing.T) {
	sels, err := monitoring.Selectors(`sum by (le) (rate(a_bucket{x="1"}[5m])) / on () group_left b{y=~".+", z!=""} or vector(0)`)
	if err != nil {
		t.Fatal(err)
	}
	want := []monitoring.Selector{{Name: "a_bucket", Labels: []string{"x"}}, {Name: "b", Labels: []string{"y", "z"}}}
	if len(sels) != len(want) {
		t.Fatalf("Selectors = %v, want %v", sels, want)
	}
	for i := range want {
		if sels[i].Name != want[i].Name || strings.Join(sels[i].Labels, ",") != strings.Join(want[i].Labels, ",") {
			t.Errorf("selector %d = %v, want %v", i, sels[i], want[i])
		}
	}
	if _, err := monitoring.Selectors(`{__name__=~"karpenter_.+"}`); err == nil {
		t.Error("a selector without a literal metric name was accepted")
	}
	if _, err := monitoring.Selectors(`sum(rate(x[5m])`); err == nil {
		t.Error("an expression that does not parse was accepted")
	}
}

func TestMetricsSeriesFollowTheFamilyType(t *testing.T) {
	m := monitoring.Metrics{
		"h":       {Name: "h", Type: "histogram", Labels: []string{"a"}},
		"s":       {Name: "s", Type: "summary"},
		"c_total": {Name: "c_total", Type: "counter", Labels: []string{"b"}},
		"g_count": {Name: "g_count", Type: "gauge"},
	}
	for _, tc := range []struct {
		sel monitoring.Selector
		ok  bool
	}{
		{monitoring.Selector{Name: "h_bucket", Labels: []string{"a", "le"}}, true},
		{monitoring.Selector{Name: "h_count", Labels: []string{"a"}}, true},
		{monitoring.Selector{Name: "h"}, false},
		{monitoring.Selector{Name: "h_bucket", Labels: []string{"b"}}, false},
		{monitoring.Selector{Name: "s", Labels: []string{"quantile"}}, true},
		{monitoring.Selector{Name: "s_sum"}, true},
		{monitoring.Selector{Name: "s_bucket"}, false},
		{monitoring.Selector{Name: "c_total", Labels: []string{"b"}}, true},
		{monitoring.Selector{Name: "c_total_count"}, false},
		{monitoring.Selector{Name: "g_count"}, true},
		{monitoring.Selector{Name: "missing"}, false},
	} {
		if err := m.Check(tc.sel); (err == nil) != tc.ok {
			t.Errorf("Check(%v) = %v, want ok=%v", tc.sel, err, tc.ok)
		}
	}
}

// TestDashboardsAreGrafanaDashboards checks what Grafana users expect of a shipped dashboard: a data source
// variable every panel and query uses, and a NodePool variable offering "All".
func TestDashboardsAreGrafanaDashboards(t *testing.T) {
	dashboards, err := monitoring.LoadDashboards(root)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	uids := map[string]bool{}
	for _, d := range dashboards {
		files[d.File] = true
		if d.UID == "" || d.Title == "" || uids[d.UID] {
			t.Errorf("%s: want a title and a unique uid, got %q %q", d.File, d.Title, d.UID)
		}
		uids[d.UID] = true
		vars := map[string]monitoring.Variable{}
		for _, v := range d.Templating.List {
			vars[v.Name] = v
		}
		if v := vars["datasource"]; v.Type != "datasource" || string(v.Query) != `"prometheus"` {
			t.Errorf("%s: want a datasource variable of Prometheus data sources, got %+v", d.File, v)
		}
		if v := vars["nodepool"]; v.Type != "query" || !v.IncludeAll || v.AllValue != ".*" {
			t.Errorf("%s: want a nodepool query variable with All (.*), got %+v", d.File, v)
		}
		for _, v := range d.Templating.List {
			if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${datasource}") {
				t.Errorf("%s: variable %s does not query ${datasource}", d.File, v.Name)
			}
		}
		for _, p := range d.AllPanels() {
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", d.File, p.Title)
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("%s: panel %q does not use ${datasource}", d.File, p.Title)
			}
			for _, tg := range p.Targets {
				if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" || tg.Expr == "" {
					t.Errorf("%s: panel %q query %s: want an expression on ${datasource}", d.File, p.Title, tg.RefID)
				}
				// A vector() fallback would let the Prometheus test pass on a metric Lathe never exports;
				// the panel's noValue shows 0 instead.
				if strings.Contains(tg.Expr, "vector(") {
					t.Errorf("%s: panel %q query %s falls back to vector()", d.File, p.Title, tg.RefID)
				}
			}
		}
	}
	for _, f := range []string{"overview.json", "performance.json", "activity.json"} {
		if !files[f] {
			t.Errorf("%s/%s is missing", monitoring.DashboardsDir, f)
		}
	}
}

// TestDashboardQueriesReadExportedMetrics parses every panel and variable query, with Grafana's variables
// filled in, with Prometheus's parser and checks each series it reads is one Lathe exports.
func TestDashboardQueriesReadExportedMetrics(t *testing.T) {
	metrics, err := monitoring.LoadMetrics(root)
	if err != nil {
		t.Fatal(err)
	}
	dashboards, err := monitoring.LoadDashboards(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dashboards {
		vals, err := d.Values(monitoring.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		vars, err := d.VariableQueries()
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range append(d.Queries(), vars...) {
			n++
			expr, err := monitoring.Expand(q.Expr, vals)
			if err != nil {
				t.Errorf("%s: %v", q, err)
				continue
			}
			checkExpr(t, q.String(), expr, metrics)
		}
	}
	if n < 30 {
		t.Errorf("the dashboards have %d queries; the loader is probably missing some", n)
	}
}

// TestAlertRulesReadExportedMetrics loads the rules file as Prometheus does and checks every rule is
// complete and reads only exported series.
func TestAlertRulesReadExportedMetrics(t *testing.T) {
	metrics, err := monitoring.LoadMetrics(root)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := monitoring.LoadRules(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.Alert == "" {
			t.Errorf("rule %q is not an alert", r.Record)
			continue
		}
		if !strings.Contains("critical warning info", r.Labels["severity"]) || r.Labels["severity"] == "" {
			t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
		}
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s: want summary and description annotations", r.Alert)
		}
		if time.Duration(r.For) <= 0 {
			t.Errorf("%s: want a for duration", r.Alert)
		}
		if r.Alert == seedBucketAlert {
			// examples/monitoring.yaml's alert, kept as written: it reads histogram buckets of a metric that
			// Karpenter v1.14 (and so Lathe) exports as a summary; KarpenterSlowNodeTermination reads the summary.
			continue
		}
		checkExpr(t, r.Alert, r.Expr, metrics)
	}
}

// seedBucketAlert is the example alert that reads karpenter_nodes_termination_duration_seconds_bucket.
const seedBucketAlert = "KarpenterSlowTermination"

// TestAlertRulesKeepTheExampleAlerts checks the rules carry examples/monitoring.yaml's alerts unchanged,
// plus alerts for blocked disruption and for interruptions.
func TestAlertRulesKeepTheExampleAlerts(t *testing.T) {
	rules, err := monitoring.LoadRules(root)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]monitoring.Rule{}
	for _, r := range rules {
		byName[r.Alert] = r
	}
	examples := exampleAlerts(t)
	if len(examples) != 4 {
		t.Fatalf("examples/monitoring.yaml has %d alerts, want 4", len(examples))
	}
	for _, ex := range examples {
		r, ok := byName[ex.Alert]
		switch {
		case !ok:
			t.Errorf("alert %s of examples/monitoring.yaml is missing", ex.Alert)
		case r.Expr != ex.Expr:
			t.Errorf("%s: expr %q, want examples/monitoring.yaml's %q", ex.Alert, r.Expr, ex.Expr)
		case ex.For != "" && r.For.String() != ex.For:
			t.Errorf("%s: for %s, want examples/monitoring.yaml's %s", ex.Alert, r.For, ex.For)
		}
	}
	for _, name := range []string{"KarpenterDisruptionBlocked", "KarpenterDisruptionBudgetExhausted", "KarpenterSpotInterruptionsHigh", "KarpenterInstanceInterruptions", "KarpenterInterruptionQueueLagging"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("alert %s is missing", name)
		}
	}
}

type exampleAlert struct {
	Alert, Expr, For string
}

// exampleAlerts reads the alerts of the PrometheusRule in examples/monitoring.yaml.
func exampleAlerts(t *testing.T) []exampleAlert {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "examples", "monitoring.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var out []exampleAlert
	for {
		var doc struct {
			Kind string
			Spec struct {
				Groups []struct {
					Rules []exampleAlert
				}
			}
		}
		if err := dec.Decode(&doc); err != nil {
			break
		}
		if doc.Kind != "PrometheusRule" {
			continue
		}
		for _, g := range doc.Spec.Groups {
			out = append(out, g.Rules...)
		}
	}
	return out
}

// checkExpr parses expr and checks every series it selects against the exported metrics.
func checkExpr(t *testing.T, what, expr string, metrics monitoring.Metrics) {
	t.Helper()
	sels, err := monitoring.Selectors(expr)
	if err != nil {
		t.Errorf("%s: %v\n%s", what, err, expr)
		return
	}
	for _, s := range sels {
		if err := metrics.Check(s); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
}
