package convert_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lathe-autoscaler/lathe/pkg/convert"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

// TestGoldenOutputsAcceptedByAPIServer creates every object of every golden output in a real kube-apiserver
// with Lathe's CRDs (schema and CEL rules), with strict field validation, so a converted manifest is one
// `kubectl apply` takes. Objects are deleted after each file, since the files reuse names.
func TestGoldenOutputsAcceptedByAPIServer(t *testing.T) {
	env, err := environment.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	for _, input := range goldenInputs(t) {
		golden := strings.TrimSuffix(input, ".yaml") + ".golden"
		t.Run(golden, func(t *testing.T) {
			b, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			docs, err := convert.ReadDocuments(golden, bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) == 0 {
				t.Fatal("golden output holds no objects")
			}
			for _, doc := range docs {
				obj := &unstructured.Unstructured{}
				if err := obj.UnmarshalJSON(doc.JSON); err != nil {
					t.Fatalf("%s: %v", doc, err)
				}
				if err := env.Client.Create(ctx, obj, client.FieldValidation("Strict")); err != nil {
					t.Errorf("%s: the API server rejected it: %v", doc, err)
					continue
				}
				t.Cleanup(func() {
					if err := env.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
						t.Error(err)
					}
				})
			}
		})
	}
}
