package v1_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

// upstreamNodeClassHashes are the karpenter.k8s.aws/ec2nodeclass-hash values Karpenter v1.14.1 computes for
// the EC2NodeClasses of examples/ and testdata/hash-ec2nodeclasses.yaml, without and with a CA bundle
// ("Q0EtQlVORExF"), keyed by file and name. They were produced outside this project by a throwaway program
// that imported github.com/aws/karpenter-provider-aws@v1.14.1, decoded each EC2NodeClass document with
// sigs.k8s.io/yaml into its v1.EC2NodeClass and printed EC2NodeClass.Hash(nil) and Hash(&ca). The manifests
// are hashed as written, before the API server's defaulting.
var upstreamNodeClassHashes = map[string][2]string{
	"tutorial-nodepool.yaml/default":      {"10479980381785602542", "18252794504329894145"},
	"production-nodeclass.yaml/default":   {"11885535781660173961", "14469866140679079526"},
	"hash-ec2nodeclasses.yaml/default":    {"9993298710318185566", "16614334827882077361"},
	"hash-ec2nodeclasses.yaml/production": {"11885535781660173961", "14469866140679079526"},
	"hash-ec2nodeclasses.yaml/rich":       {"9515175656042987035", "16731467027617636084"},
}

func TestEC2NodeClassHashMatchesUpstream(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]*awsv1.EC2NodeClass{}
	for _, f := range append(files, filepath.Join("testdata", "hash-ec2nodeclasses.yaml")) {
		for _, nc := range readNodeClasses(t, f) {
			classes[filepath.Base(f)+"/"+nc.Name] = nc
		}
	}
	ca := "Q0EtQlVORExF"
	for key, nc := range classes {
		t.Run(key, func(t *testing.T) {
			want, ok := upstreamNodeClassHashes[key]
			if !ok {
				t.Fatalf("no upstream hash recorded for %s: add it to upstreamNodeClassHashes", key)
			}
			if got := nc.Hash(nil); got != want[0] {
				t.Errorf("Hash(nil) = %s, upstream computes %s", got, want[0])
			}
			if got := nc.Hash(&ca); got != want[1] {
				t.Errorf("Hash(ca) = %s, upstream computes %s", got, want[1])
			}
		})
	}
	for key := range upstreamNodeClassHashes {
		if classes[key] == nil {
			t.Errorf("%s: EC2NodeClass not found", key)
		}
	}
}

// readNodeClasses decodes the EC2NodeClass documents of a multi-document YAML file.
func readNodeClasses(t *testing.T, path string) []*awsv1.EC2NodeClass {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*awsv1.EC2NodeClass
	for _, doc := range strings.Split(string(data), "\n---\n") {
		if !strings.Contains("\n"+doc, "\nkind: EC2NodeClass") {
			continue
		}
		nc := &awsv1.EC2NodeClass{}
		if err := yaml.UnmarshalStrict([]byte(doc), nc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, nc)
	}
	return out
}
