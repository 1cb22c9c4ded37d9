package v1_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// upstreamHashes are the karpenter.sh/nodepool-hash values Karpenter v1.14.1 computes for the NodePools in
// examples/ and testdata/hash-nodepools.yaml, keyed by file and NodePool name. They were produced outside
// this project by a throwaway program that imported sigs.k8s.io/karpenter@v1.14.1, decoded each NodePool
// document of these files with sigs.k8s.io/yaml into its karpv1.NodePool and printed NodePool.Hash(). The
// manifests are hashed as written, before the API server's defaulting.
var upstreamHashes = map[string]string{
	"disruption-budgets.yaml/budgets":                "17369979337536258260",
	"production-nodepool.yaml/default":               "1011604363979615270",
	"tutorial-nodepool.yaml/default":                 "6821555240594823858",
	"weighted-spot-ondemand.yaml/spot":               "17369979337536258260",
	"weighted-spot-ondemand.yaml/on-demand-fallback": "17369979337536258260",
	"hash-nodepools.yaml/taints-ab":                  "8423890433439870245",
	"hash-nodepools.yaml/taints-ba":                  "8423890433439870245",
	"hash-nodepools.yaml/never-expires":              "17369979337536258260",
	"hash-nodepools.yaml/expires-in-minutes":         "6821555240594823858",
	"hash-nodepools.yaml/expires-in-hours":           "6821555240594823858",
}

func TestNodePoolHashMatchesUpstream(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pools := map[string]*v1.NodePool{}
	for _, f := range append(files, filepath.Join("testdata", "hash-nodepools.yaml")) {
		for _, np := range readNodePools(t, f) {
			pools[filepath.Base(f)+"/"+np.Name] = np
		}
	}
	for key, np := range pools {
		t.Run(key, func(t *testing.T) {
			want, ok := upstreamHashes[key]
			if !ok {
				t.Fatalf("no upstream hash recorded for %s: add it to upstreamHashes", key)
			}
			if got := np.Hash(); got != want {
				t.Errorf("Hash() = %s, upstream computes %s", got, want)
			}
		})
	}
	for key := range upstreamHashes {
		if pools[key] == nil {
			t.Errorf("%s: NodePool not found", key)
		}
	}
}

func TestNodePoolHashIgnoresWhatUpstreamIgnores(t *testing.T) {
	base := readNodePools(t, filepath.Join("..", "..", "..", "examples", "production-nodepool.yaml"))[0]
	np := base.DeepCopy()
	np.Spec.Template.Spec.Requirements = nil
	np.Spec.Disruption.Budgets = nil
	np.Spec.Template.Spec.ExpireAfter.Raw = []byte(`"43200m"`)
	if np.Hash() != base.Hash() {
		t.Errorf("hash changed with requirements, budgets or the raw text of expireAfter")
	}
	np.Spec.Template.Labels["team"] = "other"
	if np.Hash() == base.Hash() {
		t.Errorf("hash did not change with a template label")
	}
}

// readNodePools decodes every NodePool document of a YAML file.
func readNodePools(t *testing.T, path string) []*v1.NodePool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*v1.NodePool
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: reading, %v", path, err)
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: decoding, %v", path, err)
		}
		if meta.Kind != "NodePool" {
			continue
		}
		np := &v1.NodePool{}
		if err := yaml.UnmarshalStrict(doc, np); err != nil {
			t.Fatalf("%s: decoding NodePool, %v", path, err)
		}
		out = append(out, np)
	}
}
