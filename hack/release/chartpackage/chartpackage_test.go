package chartpackage_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	"github.com/lathe-autoscaler/lathe/hack/release/chartpackage"
)

const (
	chartDir = "testdata/mini"
	image    = "ghcr.io/lathe-autoscaler/lathe:0.1.0"
)

func TestPackageWritesAChartHelmLoadsAndRenders(t *testing.T) {
	out := t.TempDir()
	path, err := chartpackage.Package(chartDir, out, chartpackage.Release{Version: "0.1.0", Image: image})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, "mini-0.1.0.tgz"); path != want {
		t.Errorf("Package wrote %s, want %s", path, want)
	}
	ch, err := loader.LoadFile(path)
	if err != nil {
		t.Fatalf("loading the packaged chart, %v", err)
	}
	if ch.Metadata.Version != "0.1.0" || ch.Metadata.AppVersion != "0.1.0" {
		t.Errorf("packaged version %q appVersion %q, want 0.1.0", ch.Metadata.Version, ch.Metadata.AppVersion)
	}
	if len(ch.CRDObjects()) != 1 {
		t.Errorf("packaged chart has %d CRDs, want the 1 in crds/", len(ch.CRDObjects()))
	}
	values, err := chartutil.ToRenderValues(ch, nil, chartutil.ReleaseOptions{Name: "lathe", Namespace: "kube-system"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := engine.Render(ch, values)
	if err != nil {
		t.Fatalf("rendering the packaged chart, %v", err)
	}
	if got := manifests["mini/templates/deployment.yaml"]; !strings.Contains(got, "image: "+image+"\n") {
		t.Errorf("rendered deployment does not run %s:\n%s", image, got)
	}
}

func TestPackageFailsBeforeWritingWhenTheChartDisagrees(t *testing.T) {
	out := t.TempDir()
	_, err := chartpackage.Package(chartDir, out, chartpackage.Release{Version: "0.2.0", Image: image})
	if err == nil || !strings.Contains(err.Error(), `chart version "0.1.0" differs from the release version "0.2.0"`) {
		t.Errorf("Package error = %v, want the version mismatch", err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("Package wrote %d files despite the mismatch", len(entries))
	}
	if _, err := chartpackage.Package(filepath.Join(t.TempDir(), "missing"), out, chartpackage.Release{Version: "0.1.0"}); err == nil {
		t.Error("Package of a missing folder succeeded")
	}
}

func TestCheck(t *testing.T) {
	release := chartpackage.Release{Version: "0.1.0", Image: image, Digest: "sha256:aaaa"}
	tests := []struct {
		name    string
		edit    func(ch *chart.Chart)
		release chartpackage.Release
		wantErr string
	}{
		{name: "defaults match", release: release},
		{name: "tag set to the version", release: release, edit: setImage("tag", "0.1.0")},
		{name: "digest set to the built one", release: release, edit: setImage("digest", "sha256:aaaa")},
		{name: "no image to check", release: chartpackage.Release{Version: "0.1.0"}, edit: func(ch *chart.Chart) { delete(ch.Values, "controller") }},
		{name: "version differs", release: release, edit: func(ch *chart.Chart) { ch.Metadata.Version = "0.1.1" }, wantErr: `chart version "0.1.1"`},
		{name: "appVersion differs", release: release, edit: func(ch *chart.Chart) { ch.Metadata.AppVersion = "v0.1.0" }, wantErr: `chart appVersion "v0.1.0"`},
		{name: "repository differs", release: release, edit: setImage("repository", "public.ecr.aws/karpenter/controller"), wantErr: "default image public.ecr.aws/karpenter/controller:0.1.0 differs"},
		{name: "tag differs", release: release, edit: setImage("tag", "latest"), wantErr: "default image ghcr.io/lathe-autoscaler/lathe:latest differs"},
		{name: "digest differs", release: release, edit: setImage("digest", "sha256:bbbb"), wantErr: "default image digest sha256:bbbb differs"},
		{name: "no image values", release: release, edit: func(ch *chart.Chart) { delete(ch.Values, "controller") }, wantErr: "controller.image.repository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := loader.LoadDir(chartDir)
			if err != nil {
				t.Fatal(err)
			}
			if tt.edit != nil {
				tt.edit(ch)
			}
			err = chartpackage.Check(ch, tt.release)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Check = %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Check = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func setImage(key, value string) func(ch *chart.Chart) {
	return func(ch *chart.Chart) {
		ch.Values["controller"].(map[string]any)["image"].(map[string]any)[key] = value
	}
}
