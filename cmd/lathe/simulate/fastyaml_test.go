package simulate

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/lathe-autoscaler/lathe/pkg/simulation/workload"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// blockDocuments are documents in the block style blockYAMLToJSON reads; it must convert each.
var blockDocuments = []string{
	"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  labels:\n    app.kubernetes.io/name: web\n    z: '1'\n",
	"kind: Deployment\napiVersion: apps/v1\nspec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n      - name: app\n        image: registry.k8s.io/pause:3.9\n        ports:\n        - containerPort: 80\n        - {}\n        args:\n        - --v=2\n        - run\n      - image: b\n        name: b\n",
	"# a comment\nkind: Pod\n\nspec:\n    # indented comment\n    nodeSelector:\n        disk: ssd\n    tolerations:\n        -   key: a\n            operator: Exists\n        -   effect: NoSchedule\n    hostNetwork: true\n    enableServiceLinks: Off\n    priority: -5\n    x: 0\n    y2: ~\n    cpu: 100m\n    memory: 1.5Gi\n    storage: 10G\n    empty:\n    list: []\n    map: {}\n",
	"kind: \"Pod\"\nmetadata:\n  annotations:\n    \"quoted key\": \"a < b & c > d\"\n    'single': 'it is'\n    plain: it's a \"value\", with commas\n    url: http://x.example/a?b=c\n",
	"a:\n- 1\n- two\n- null\nb: x\n",
	"kind: 7\nb: 123456789012345678\nc: 0x1Fi\nd: -x\ne: --x-y=1,2\n",
}

// blockDeclined are documents outside the subset; blockYAMLToJSON must leave each to the full parser.
var blockDeclined = []string{
	"a: 1 # comment\n", "a: &x 1\nb: *x\n", "a: !!str 1\n", "a: |\n  text\n", "a: >\n  text\n",
	"a: b\n  c\n", "a: {b: c}\n", "a: [b]\n", "yes: 1\n", "1: a\n", "a: 1.5\n", "a: 012\n", "a: +1\n",
	"a: -0\n", "a: 0x1F\n", "a: 1234567890123456789\n", "a: 2001-12-14\n", "a: 1E\n", "a: 1:2Gi\n", "a: ---x\n", "a: -1Gi\n", "a: -.5\n", "a: -- x\n", "a: \"esc\\n\"\n", "a: 'it''s'\n",
	"a: 1\na: 2\n", "a:\tb\n", "a: b\r\n", "a: caf\xc3\xa9\n", "- a\n- b\n", "just a string\n", "  a: 1\n",
	"a: b: c\n", "a: b:\n", "a:\n  - b\n  c: d\n", "a:\n- - b\n", "a:\n-\n  b: c\n", "a: 1\n...\n",
	"%YAML 1.1\n---\na: 1\n", "? a\n: b\n", "a : b\n", "a:b\n", "a: .inf\n", "~: a\n", "a: ~b\n",
	"a:\n    b: 1\n  c: 2\n", "a: x\n---\nb: y\n", "\"a\\\"b\": c\n", "a: \"x\" y\n", "<<: {a: 1}\n",
}

// TestBlockYAMLToJSON holds blockYAMLToJSON to YAMLToJSON, byte for byte, on documents it reads (the
// examples it accepts, a GPU workload as yaml.Marshal writes it, the cases above) and checks that it
// declines the rest.
func TestBlockYAMLToJSON(t *testing.T) {
	docs := append([]string{}, blockDocuments...)
	for _, p := range workload.GPU(30) {
		p.TypeMeta.APIVersion, p.TypeMeta.Kind = "v1", "Pod"
		out, err := yaml.Marshal(struct {
			*corev1.Pod `json:",inline"`
		}{p})
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(out))
	}
	for i, d := range docs {
		got, kind, ok := blockYAMLToJSON([]byte(d))
		if !ok {
			t.Errorf("document %d declined:\n%s", i, d)
			continue
		}
		checkBlockYAML(t, []byte(d), got, kind)
	}
	for _, d := range blockDeclined {
		if got, _, ok := blockYAMLToJSON([]byte(d)); ok {
			t.Errorf("converted %q to %s, want it declined", d, got)
		}
	}
	accepted := 0
	for _, d := range append(exampleDocuments(t), stringsToBytes(yamlEdgeCases)...) {
		if got, kind, ok := blockYAMLToJSON(d); ok {
			accepted++
			checkBlockYAML(t, d, got, kind)
		}
	}
	if accepted == 0 {
		t.Error("no example document in the block subset")
	}
}

func checkBlockYAML(t *testing.T, doc, got []byte, kind string) {
	t.Helper()
	want, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Errorf("converted a document YAMLToJSON refuses (%v):\n%s", err, doc)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("document\n%s\ngot  %s\nwant %s", doc, got, want)
	}
	if wantKind, err := kindOf(want); err == nil && wantKind != kind {
		t.Errorf("document\n%s\nkind %q, want %q", doc, kind, wantKind)
	}
}

// FuzzBlockYAMLToJSON: whatever blockYAMLToJSON converts, YAMLToJSON converts to the same bytes.
func FuzzBlockYAMLToJSON(f *testing.F) {
	for _, d := range append(append(blockDocuments, blockDeclined...), yamlEdgeCases...) {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if got, kind, ok := blockYAMLToJSON(doc); ok {
			checkBlockYAML(t, doc, got, kind)
		}
	})
}

func exampleDocuments(t *testing.T) [][]byte {
	t.Helper()
	examples, _ := filepath.Glob("../../../examples/*.yaml")
	if len(examples) == 0 {
		t.Fatal("no examples found")
	}
	var docs [][]byte
	for _, name := range examples {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			raw, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(bytes.TrimSpace(raw)) > 0 {
				docs = append(docs, raw)
			}
		}
	}
	return docs
}

func stringsToBytes(in []string) [][]byte {
	out := make([][]byte, len(in))
	for i, s := range in {
		out[i] = []byte(s)
	}
	return out
}
