package crds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

// env is the API server every test in this package validates against. It is started once in TestMain
// because starting etcd and kube-apiserver costs seconds.
var env *environment.Environment

func TestMain(m *testing.M) {
	var err error
	env, err = environment.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// verdict is one manifest and what the API server must say about it: accept it (reject == "") or reject
// it with an error containing reject.
type verdict struct {
	name   string
	patch  string // YAML merge patch (RFC 7386) applied to the kind's base manifest
	reject string
}

// serial makes object names unique across tests that share the API server.
var serial atomic.Int64

// anyError stands for rejections whose wording comes from the API server rather than from a rule message,
// for example a CEL runtime error.
const anyError = "\x00any"

// runVerdicts creates each case's manifest in the API server and checks the verdict.
func runVerdicts(t *testing.T, base string, cases []verdict) {
	t.Helper()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := manifest(t, base, tc.patch)
			obj.SetName(fmt.Sprintf("case-%d-%d", serial.Add(1), i))
			err := env.Client.Create(context.Background(), obj, client.FieldValidation("Strict"))
			checkVerdict(t, err, tc.reject)
			if err == nil {
				_ = env.Client.Delete(context.Background(), obj)
			}
		})
	}
}

// manifest decodes base, applies the merge patch and returns the object.
func manifest(t *testing.T, base, patch string) *unstructured.Unstructured {
	t.Helper()
	var doc, p map[string]any
	if err := yaml.Unmarshal([]byte(base), &doc); err != nil {
		t.Fatalf("decoding base manifest: %v", err)
	}
	if patch != "" {
		if err := yaml.Unmarshal([]byte(patch), &p); err != nil {
			t.Fatalf("decoding patch: %v", err)
		}
		doc = mergePatch(doc, p)
	}
	return &unstructured.Unstructured{Object: doc}
}

// mergePatch applies an RFC 7386 JSON merge patch: maps merge key by key, null deletes, anything else replaces.
func mergePatch(doc, patch map[string]any) map[string]any {
	if doc == nil {
		doc = map[string]any{}
	}
	for k, pv := range patch {
		if pv == nil {
			delete(doc, k)
			continue
		}
		pm, pIsMap := pv.(map[string]any)
		dm, dIsMap := doc[k].(map[string]any)
		if pIsMap && dIsMap {
			doc[k] = mergePatch(dm, pm)
			continue
		}
		doc[k] = pv
	}
	return doc
}

// update creates base (patched by create), then applies the update patch and returns the update's error.
func update(t *testing.T, base, name, create, change string) error {
	t.Helper()
	ctx := context.Background()
	obj := manifest(t, base, create)
	obj.SetName(name)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, obj) })
	var p map[string]any
	if err := yaml.Unmarshal([]byte(change), &p); err != nil {
		t.Fatalf("decoding patch: %v", err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("encoding patch: %v", err)
	}
	return env.Client.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", b))
}

// checkVerdict fails the test unless err matches the wanted verdict: nil for "", else containing reject.
func checkVerdict(t *testing.T, err error, reject string) {
	t.Helper()
	switch {
	case reject == "" && err != nil:
		t.Fatalf("want accepted, got rejected: %v", err)
	case reject != "" && err == nil:
		t.Fatalf("want rejected with %q, got accepted", reject)
	case reject != "" && reject != anyError && !strings.Contains(err.Error(), reject):
		t.Fatalf("want rejected with %q, got: %v", reject, err)
	}
}

// keyOf returns the object's name as a client key.
func keyOf(obj client.Object) client.ObjectKey { return client.ObjectKeyFromObject(obj) }
