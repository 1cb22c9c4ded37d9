package simulate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// yamlEdgeCases are documents whose conversion depends on YAML 1.1 details: non-string keys, booleans,
// numbers, anchors, block scalars, flow collections, nulls.
var yamlEdgeCases = []string{
	"apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: {yes: on, 1: 2, 1.5: x, true: false, n: null}}\n",
	"a: &x {b: [1, 2.50, 1e3, 0x1F, 0o17, -0.0]}\nc: *x\nd: <<\n",
	"s: |\n  line one\n  line two\n\nt: >-\n  folded\n  text\nu: 'quoted ''x'''\nv: \"esc\\tape\\u00e9\"\n",
	"- a\n- b: c\n- [d, {e: f}]\n",
	"just a string\n",
	"42\n",
	"~\n",
	"# only a comment\n",
	"k: 2001-12-14t21:59:43.10-05:00\nl: 0777\nm: +12\nn: 1_000\n",
	"big: 18446744073709551615\nneg: -9223372036854775808\nf: 3.4028236e+38\n",
	"merge:\n  <<: {a: 1}\n  b: 2\n",
	"---\napiVersion: v1\nkind: Pod\n",
	"--- {kind: Node}\n",
	"---\n",
}

func TestYAMLDocumentsToJSONMatchesYAMLToJSON(t *testing.T) {
	var docs [][]byte
	for _, c := range yamlEdgeCases {
		docs = append(docs, []byte(c))
	}
	examples, _ := filepath.Glob("../../../examples/*.yaml")
	if len(examples) == 0 {
		t.Fatal("no examples found")
	}
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
	got, kinds, ok := yamlDocumentsToJSON(docs)
	if !ok {
		t.Fatal("documents not converted together")
	}
	for i, d := range docs {
		want, err := yaml.YAMLToJSON(d)
		if err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		if !bytes.Equal(got[i], want) {
			t.Errorf("document %d:\n%s\ngot  %s\nwant %s", i, d, got[i], want)
		}
		if kind, err := kindOf(want); err == nil && kind != kinds[i] {
			t.Errorf("document %d: kind %q, want %q", i, kinds[i], kind)
		}
	}
}

func TestYAMLDocumentsToJSONDeclines(t *testing.T) {
	for name, docs := range map[string][]string{
		"syntax error":           {"a: 1\n", "b: [1, 2\n", "c: 3\n"},
		"document end inside":    {"a: 1\n...\nb: 2\n", "c: 3\n"},
		"non-scalar key":         {"? [a, b]\n: c\n"},
		"null key":               {"~: a\n"},
		"infinity":               {"a: .inf\n"},
		"directive inside":       {"a: 1\n", "%YAML 1.1\n---\nb: 2\n"},
		"unterminated quote":     {"a: 'open\n", "b: 1\n"},
		"comment before marker":  {"# c\n---\na: 1\n"},
		"marker with a document": {"a: 1\n--- b: 2\n"},
	} {
		var raw [][]byte
		for _, d := range docs {
			raw = append(raw, []byte(d))
		}
		if out, _, ok := yamlDocumentsToJSON(raw); ok {
			t.Errorf("%s: converted together: %q", name, out)
		}
	}
}

// TestReadReportsTheDocumentAtFault: a syntax error among many documents is still reported with its
// document number, by the one-by-one fallback.
func TestReadReportsTheDocumentAtFault(t *testing.T) {
	var in bytes.Buffer
	for i := range 50 {
		in.WriteString("---\napiVersion: v1\nkind: Pod\nmetadata: {name: p")
		if i == 41 {
			in.WriteString("\n  broken: [")
		}
		in.WriteString("}\n")
	}
	o := &objects{}
	err := o.read(&in, "pods.yaml")
	if err == nil || !strings.Contains(err.Error(), "pods.yaml document 42, parsing YAML") {
		t.Fatalf("error %v, want one naming document 42", err)
	}
}

func TestReadDecodesEveryDocumentInOrder(t *testing.T) {
	var in bytes.Buffer
	for i := range 101 {
		fmt.Fprintf(&in, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\n", i)
		if i%10 == 0 {
			in.WriteString("---\n# nothing\n")
		}
	}
	o := &objects{}
	if err := o.read(&in, "pods.yaml"); err != nil {
		t.Fatal(err)
	}
	if len(o.pods) != 101 {
		t.Fatalf("%d pods, want 101", len(o.pods))
	}
	for i, p := range o.pods {
		if want := fmt.Sprintf("p%d", i); p.Name != want || p.Namespace != "default" {
			t.Errorf("pod %d is %s/%s, want default/%s", i, p.Namespace, p.Name, want)
		}
	}
}
