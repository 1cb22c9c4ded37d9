package chart_test

import (
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/lathe-autoscaler/lathe/pkg/test/chart"
)

// TestChartsLint runs `helm lint --strict`'s checks (Helm's lint package) on both charts: warnings fail.
func TestChartsLint(t *testing.T) {
	for _, name := range []string{"lathe", "lathe-crd"} {
		t.Run(name, func(t *testing.T) {
			vals := map[string]any{}
			if name == "lathe" {
				vals["settings"] = map[string]any{"clusterName": "demo"}
			}
			for _, m := range lint.All(chart.Dir(name), vals, namespace, true).Messages {
				if m.Severity >= support.WarningSev {
					t.Error(m)
				} else {
					t.Log(m)
				}
			}
		})
	}
}
