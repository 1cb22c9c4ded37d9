package crds_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// exampleVars fill the ${VAR} placeholders of the examples, as envsubst would.
var exampleVars = map[string]string{
	"CLUSTER_NAME": "test-cluster",
	"AMD_AMI_ID":   "ami-0123456789abcdef0",
}

// readExamples returns every document of every file in examples/, placeholders filled.
func readExamples(t *testing.T) map[string][]*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("finding examples: %v (found %d)", err, len(files))
	}
	placeholder := regexp.MustCompile(`\$\{([A-Z_]+)\}`)
	out := map[string][]*unstructured.Unstructured{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		filled := placeholder.ReplaceAllFunc(raw, func(m []byte) []byte {
			v, ok := exampleVars[string(m[2:len(m)-1])]
			if !ok {
				t.Fatalf("%s: no value for placeholder %s", f, m)
			}
			return []byte(v)
		})
		decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(filled), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: decoding: %v", f, err)
			}
			if len(obj.Object) > 0 {
				out[filepath.Base(f)] = append(out[filepath.Base(f)], obj)
			}
		}
	}
	return out
}

func TestExamplesAreAccepted(t *testing.T) {
	installMonitoringCRDs(t)
	examples := readExamples(t)
	for _, want := range []string{"tutorial-nodepool.yaml", "production-nodepool.yaml", "production-nodeclass.yaml", "weighted-spot-ondemand.yaml", "disruption-budgets.yaml", "inflate.yaml", "monitoring.yaml"} {
		if len(examples[want]) == 0 {
			t.Errorf("examples/%s missing or empty", want)
		}
	}
	for file, objs := range examples {
		for _, obj := range objs {
			t.Run(file+"/"+obj.GetKind()+"/"+obj.GetName(), func(t *testing.T) {
				if obj.GetNamespace() == "" && (obj.GetKind() == "Deployment") {
					obj.SetNamespace("default")
				}
				err := env.Client.Create(context.Background(), obj.DeepCopy(), client.DryRunAll, client.FieldValidation("Strict"))
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
			})
		}
	}
}

// installMonitoringCRDs installs stand-in Prometheus Operator CRDs so monitoring.yaml can be applied.
func installMonitoringCRDs(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "monitoring-crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var defs []*apiextensionsv1.CustomResourceDefinition
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := decoder.Decode(crd); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, crd)
	}
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: defs, MaxTime: time.Minute}); err != nil {
		t.Fatalf("installing monitoring CRDs: %v", err)
	}
}

// column is a printer column as the API server reports it: kubectl shows priority 0 always and priority 1
// with -o wide.
type column struct {
	Name     string
	Priority int32
}

func TestPrinterColumns(t *testing.T) {
	tests := []struct {
		resource string
		want     []column
	}{
		{"/apis/karpenter.sh/v1/nodepools", []column{{"Name", 0}, {"NodeClass", 0}, {"Nodes", 0}, {"Ready", 0}, {"Age", 0}, {"Weight", 1}, {"CPU", 1}, {"Memory", 1}}},
		{"/apis/karpenter.sh/v1/nodeclaims", []column{{"Name", 0}, {"Type", 0}, {"Capacity", 0}, {"Zone", 0}, {"Node", 0}, {"Ready", 0}, {"Age", 0}, {"ImageID", 1}, {"ID", 1}, {"NodePool", 1}, {"NodeClass", 1}, {"Drifted", 1}}},
		{"/apis/karpenter.k8s.aws/v1/ec2nodeclasses", []column{{"Name", 0}, {"Ready", 0}, {"Age", 0}, {"Role", 1}}},
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.NegotiatedSerializer = nil
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.resource, func(t *testing.T) {
			table := getTable(t, httpClient, strings.TrimSuffix(cfg.Host, "/")+tc.resource)
			var got []column
			for _, c := range table.ColumnDefinitions {
				got = append(got, column{c.Name, c.Priority})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("columns = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPrinterColumnValues(t *testing.T) {
	ctx := context.Background()
	claim := manifest(t, nodeClaimBase, `metadata: {labels: {node.kubernetes.io/instance-type: m5.large, karpenter.sh/capacity-type: spot, topology.kubernetes.io/zone: us-east-1a}}`)
	claim.SetName("columns")
	if err := env.Client.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, claim) })
	cfg := rest.CopyConfig(env.Config)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	table := getTable(t, httpClient, strings.TrimSuffix(cfg.Host, "/")+"/apis/karpenter.sh/v1/nodeclaims/columns")
	if len(table.Rows) != 1 {
		t.Fatalf("rows = %d, want 1", len(table.Rows))
	}
	cells := table.Rows[0].Cells
	for i, want := range map[int]string{0: "columns", 1: "m5.large", 2: "spot", 3: "us-east-1a", 9: "default", 10: "default"} {
		if cells[i] != want {
			t.Errorf("cell %d (%s) = %v, want %q", i, table.ColumnDefinitions[i].Name, cells[i], want)
		}
	}
}

// getTable fetches url as a server-side printed Table, as kubectl get does.
func getTable(t *testing.T, c interface {
	Do(*http.Request) (*http.Response, error)
}, url string) *metav1.Table {
	t.Helper()
	var body []byte
	// The API server answers 429 while a CRD's storage (re)initialises just after installation; retry then.
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusTooManyRequests && attempt < 30 {
			time.Sleep(time.Second)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
		}
		break
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		t.Fatalf("decoding table: %v", err)
	}
	return table
}
