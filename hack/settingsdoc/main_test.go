package main

import (
	"os"
	"strings"
	"testing"

	"github.com/lathe-autoscaler/lathe/pkg/operator/options"
)

// The checked-in reference must be exactly what the generator writes from the code, so a setting added,
// removed or changed in pkg/operator/options can't leave docs/settings.md behind.
func TestSettingsReferenceIsCurrent(t *testing.T) {
	want := render(options.Reference())
	got, err := os.ReadFile("../../docs/settings.md")
	if err != nil {
		t.Fatalf("reading docs/settings.md, %v", err)
	}
	if string(got) != string(want) {
		t.Errorf("docs/settings.md is stale: run 'make generate' (go run ./hack/settingsdoc docs/settings.md) and commit it;\nfirst difference at line %d", firstDiffLine(string(got), string(want)))
	}
}

// Every setting shows up as one row with its variable, flag, default and what it accepts.
func TestRenderHasOneRowPerSetting(t *testing.T) {
	settings := options.Reference()
	out := string(render(settings))
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| variable") && !strings.HasPrefix(line, "| ---") {
			rows++
		}
	}
	if rows != len(settings) {
		t.Errorf("rendered %d rows, want one per setting (%d)", rows, len(settings))
	}
	for _, fragment := range []string{
		"| BATCH_MAX_DURATION | `--batch-max-duration` | `10s` | positive duration",
		"| AMI_REFRESH_INTERVAL | `--ami-refresh-interval` | `1m` | duration ≥ 1m",
		"| CLUSTER_NAME | `--cluster-name` | – |",
		"| LOG_LEVEL | `--log-level` | `info` | one of debug, info, error |",
	} {
		if !strings.Contains(out, fragment) {
			t.Errorf("reference lacks %q", fragment)
		}
	}
}

func firstDiffLine(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}
