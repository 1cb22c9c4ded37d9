package chart_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/lathe-autoscaler/lathe/pkg/apis/crds"
	"github.com/lathe-autoscaler/lathe/pkg/test/chart"
)

// TestCRDsMatchTheAPITypes checks both charts carry the CRDs generated from the API types (make generate
// copies them; make verify-generate catches a stale copy), that the CRD chart adds additionalAnnotations,
// and that the API server accepts the CRD chart's output.
func TestCRDsMatchTheAPITypes(t *testing.T) {
	want, err := crds.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	lathe := render(t, "lathe", chart.Options{})
	crdChart := render(t, "lathe-crd", chart.Options{Values: map[string]any{"additionalAnnotations": map[string]any{"helm.sh/resource-policy": "keep"}}})
	for name, got := range map[string][]*unstructured.Unstructured{"lathe crds/": lathe.CRDs, "lathe-crd templates/": crdChart.Objects} {
		if len(got) != len(want) {
			t.Fatalf("%s has %d CRDs, want %d", name, len(got), len(want))
		}
		for i, crd := range got {
			spec, _, _ := unstructured.NestedMap(crd.Object, "spec")
			wantSpec := map[string]any{}
			b, _ := yaml.Marshal(want[i].Spec)
			_ = yaml.Unmarshal(b, &wantSpec)
			if crd.GetName() != want[i].Name || !equality.Semantic.DeepEqual(spec, wantSpec) {
				t.Errorf("%s%s differs from pkg/apis/crds/%s: run make generate", name, crd.GetName(), want[i].Name)
			}
		}
	}
	for _, crd := range crdChart.Objects {
		if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" || crd.GetAnnotations()["controller-gen.kubebuilder.io/version"] == "" {
			t.Errorf("%s annotations %v, want additionalAnnotations and controller-gen's", crd.GetName(), crd.GetAnnotations())
		}
	}
	dryRunApply(t, crdChart.Objects)
}

// TestMonitoringTemplates renders the PrometheusRule and dashboard ConfigMaps from the files the dashboards
// part writes (files/prometheus-rules.yaml, dashboards/*.json), here stand-ins in a copy of the chart, and
// checks they render nothing when the files are absent or the options are off.
func TestMonitoringTemplates(t *testing.T) {
	rules := "groups:\n- name: lathe\n  rules:\n  - alert: LatheDown\n    expr: absent(up{job=\"lathe\"})\n    for: 5m\n    labels: {severity: critical}\n"
	dir := copyChart(t, map[string]string{
		"files/prometheus-rules.yaml": rules,
		"dashboards/overview.json":    `{"title": "Lathe overview", "panels": []}`,
		"dashboards/activity.json":    `{"title": "Lathe activity", "panels": []}`,
	})
	on := map[string]any{"prometheusRule": map[string]any{"enabled": true, "additionalLabels": map[string]any{"release": "prom"}},
		"grafanaDashboards": map[string]any{"enabled": true, "additionalLabels": map[string]any{"team": "platform"}}}
	opts := chart.Options{Release: "lathe", Namespace: namespace, Values: on, APIVersions: []string{"monitoring.coreos.com/v1"}}
	r, err := chart.Render(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	rule := find(t, r.Objects, "PrometheusRule")
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	wantRules := map[string]any{}
	_ = yaml.Unmarshal([]byte(rules), &wantRules)
	if !equality.Semantic.DeepEqual(groups, wantRules["groups"]) || rule.GetLabels()["release"] != "prom" {
		t.Errorf("PrometheusRule groups %v labels %v, want the rules file's groups", groups, rule.GetLabels())
	}
	var dashboards []string
	for _, o := range r.Objects {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		if o.GetLabels()["grafana_dashboard"] != "1" || o.GetLabels()["team"] != "platform" || len(data) != 1 {
			t.Errorf("ConfigMap %s labels %v data keys %d", o.GetName(), o.GetLabels(), len(data))
		}
		for key, body := range data {
			dashboards = append(dashboards, key)
			if !strings.Contains(body, `"title": "Lathe`) {
				t.Errorf("ConfigMap %s key %s holds %q, want the dashboard JSON", o.GetName(), key, body)
			}
		}
	}
	if strings.Join(dashboards, ",") != "activity.json,overview.json" {
		t.Errorf("dashboards %v, want one ConfigMap per dashboards/*.json", dashboards)
	}
	dryRunApply(t, r.Objects)

	for name, o := range map[string]chart.Options{
		"disabled":               {Release: "lathe", Namespace: namespace, APIVersions: opts.APIVersions},
		"no prometheus operator": {Release: "lathe", Namespace: namespace, Values: on},
	} {
		r, err := chart.Render(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		k := kinds(r.Objects)
		if k["PrometheusRule"] != 0 || (name == "disabled" && k["ConfigMap"] != 0) {
			t.Errorf("%s: rendered %v", name, k)
		}
	}
	bare, err := chart.Render(copyChart(t, nil), opts)
	if err != nil {
		t.Fatal(err)
	}
	if k := kinds(bare.Objects); k["PrometheusRule"] != 0 || k["ConfigMap"] != 0 {
		t.Errorf("without the files the chart rendered %v, want no PrometheusRule and no ConfigMap", k)
	}
}

// copyChart copies charts/lathe into a temporary folder without its files/ and dashboards/, then writes extra.
func copyChart(t *testing.T, extra map[string]string) string {
	t.Helper()
	src, dst := chart.Dir("lathe"), filepath.Join(t.TempDir(), "lathe")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() && (rel == "files" || rel == "dashboards") {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel, body := range extra {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
