// Package crds embeds the CustomResourceDefinitions generated from Lathe's API types (make generate), so
// tests, the local cluster launcher and the Helm chart install exactly what the types declare.
package crds

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// CRDs returns the CustomResourceDefinitions of NodePool, NodeClaim and EC2NodeClass, ordered by file name.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("listing embedded CRDs, %w", err)
	}
	sort.Strings(names)
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, name := range names {
		b, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading %s, %w", name, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return nil, fmt.Errorf("decoding %s, %w", name, err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// Files returns the raw manifests by file name, for tools that apply YAML.
func Files() (map[string][]byte, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("listing embedded CRDs, %w", err)
	}
	out := make(map[string][]byte, len(names))
	for _, name := range names {
		b, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading %s, %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}
