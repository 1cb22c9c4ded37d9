// Package chart renders the Helm charts in charts/ with Helm's own Go packages (loader, chartutil, engine),
// the way `helm template` does, for the chart tests and the RBAC coverage test.
package chart

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Options of one rendering.
type Options struct {
	// Release and Namespace name the release (helm template's NAME and --namespace).
	Release, Namespace string
	// ValuesFiles are read in order (helm's -f); Set are helm's --set flags, applied after them.
	ValuesFiles []string
	Set         []string
	// Values are merged last (a Go-side --set).
	Values map[string]any
	// APIVersions are added to the capabilities (helm's --api-versions), e.g. monitoring.coreos.com/v1.
	APIVersions []string
}

// Rendered is what a rendering produced.
type Rendered struct {
	// Objects are the manifests of templates/, in template-name order, then document order.
	Objects []*unstructured.Unstructured
	// CRDs are the manifests of crds/ (helm install applies them before the templates).
	CRDs []*unstructured.Unstructured
	// Notes is templates/NOTES.txt rendered.
	Notes string
}

// Dir returns the folder of the named chart in the repository (charts/<name>).
func Dir(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "charts", name)
}

// Render loads the chart in dir, merges the values as the helm CLI does (values.yaml, files, --set), checks
// them against values.schema.json, and renders the templates.
func Render(dir string, opts Options) (*Rendered, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s, %w", dir, err)
	}
	vals, err := userValues(opts)
	if err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.APIVersions = append(append(chartutil.VersionSet{}, caps.APIVersions...), opts.APIVersions...)
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: opts.Release, Namespace: opts.Namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, fmt.Errorf("computing values, %w", err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s, %w", ch.Name(), err)
	}
	out := &Rendered{}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case strings.HasSuffix(name, "NOTES.txt"):
			out.Notes = files[name]
		case strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml"):
			objs, err := Decode([]byte(files[name]))
			if err != nil {
				return nil, fmt.Errorf("decoding %s, %w", name, err)
			}
			out.Objects = append(out.Objects, objs...)
		}
	}
	if out.CRDs, err = crds(ch); err != nil {
		return nil, err
	}
	return out, nil
}

// userValues merges the values files, --set flags and Go values, in that order.
func userValues(opts Options) (map[string]any, error) {
	vals := map[string]any{}
	for _, f := range opts.ValuesFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading values %s, %w", f, err)
		}
		v, err := chartutil.ReadValues(b)
		if err != nil {
			return nil, fmt.Errorf("parsing values %s, %w", f, err)
		}
		vals = chartutil.MergeTables(v.AsMap(), vals)
	}
	for _, s := range opts.Set {
		if err := strvals.ParseInto(s, vals); err != nil {
			return nil, fmt.Errorf("parsing --set %s, %w", s, err)
		}
	}
	if opts.Values != nil {
		vals = chartutil.MergeTables(deepCopy(opts.Values), vals)
	}
	return vals, nil
}

// deepCopy copies nested maps so that merging never writes into the caller's values.
func deepCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = deepCopy(sub)
		}
		out[k] = v
	}
	return out
}

func crds(ch *chart.Chart) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, f := range ch.CRDObjects() {
		objs, err := Decode(f.File.Data)
		if err != nil {
			return nil, fmt.Errorf("decoding %s, %w", f.Filename, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Decode splits a multi-document YAML stream into objects, skipping empty documents.
func Decode(b []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}
