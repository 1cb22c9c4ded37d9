// Package chart_test renders charts/lathe and charts/lathe-crd with Helm's Go packages for several value sets
// and applies every rendered object to a real kube-apiserver with a server-side dry run.
package chart_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lathe-autoscaler/lathe/pkg/test/chart"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

// namespace is the release namespace of every rendering.
const namespace = "lathe"

// env is the API server the rendered manifests are applied to, started once for the package.
var env *environment.Environment

func TestMain(m *testing.M) {
	var err error
	if env, err = environment.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = setUp()
	code := 1
	if err == nil {
		code = m.Run()
	} else {
		fmt.Fprintln(os.Stderr, err)
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// setUp creates the release namespace and stand-ins for the Prometheus Operator's CRDs.
func setUp() error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		return fmt.Errorf("creating namespace, %w", err)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "monitoring-crds.yaml"))
	if err != nil {
		return err
	}
	var defs []*apiextensionsv1.CustomResourceDefinition
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := dec.Decode(crd); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		defs = append(defs, crd)
	}
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: defs, MaxTime: time.Minute}); err != nil {
		return fmt.Errorf("installing monitoring CRDs, %w", err)
	}
	return nil
}

// render renders charts/<name> as release "lathe" in the test namespace.
func render(t *testing.T, name string, opts chart.Options) *chart.Rendered {
	t.Helper()
	opts.Release, opts.Namespace = "lathe", namespace
	r, err := chart.Render(chart.Dir(name), opts)
	if err != nil {
		t.Fatalf("rendering %s: %v", name, err)
	}
	return r
}

// dryRunApply server-side applies every object with dryRun=All and fails the test on any rejection.
func dryRunApply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, obj := range objs {
		err := env.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
			client.DryRunAll, client.FieldOwner("helm"), client.ForceOwnership)
		if err != nil {
			t.Errorf("API server rejected %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
}

// kinds counts the rendered objects by kind.
func kinds(objs []*unstructured.Unstructured) map[string]int {
	out := map[string]int{}
	for _, o := range objs {
		out[o.GetKind()]++
	}
	return out
}

// find returns the single rendered object of the kind, failing the test when there isn't exactly one.
func find(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s, rendered %d", kind, len(found))
	}
	return found[0]
}
