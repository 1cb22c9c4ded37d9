// Command crdpatch adds to the generated CRDs the schema rules controller-gen markers cannot express, so that
// the API server checks them with plain OpenAPI validation (cheap) instead of CEL (which would exceed the
// cost budget on maps of unbounded strings). make generate runs it after controller-gen.
//
// Usage: go run ./hack/crdpatch pkg/apis/crds
package main

import (
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// labelValue is the schema of a Kubernetes label value.
var labelValue = apiextensionsv1.JSONSchemaProps{
	Type:      "string",
	MaxLength: ptr.To(int64(63)),
	Pattern:   `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`,
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdpatch CRD_DIR")
		os.Exit(2)
	}
	if err := patchFile(filepath.Join(os.Args[1], "karpenter.sh_nodepools.yaml"), labelValues("spec", "template", "metadata", "labels")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// labelValues returns a patch that makes the map at path hold label values.
func labelValues(path ...string) func(*apiextensionsv1.JSONSchemaProps) error {
	return func(root *apiextensionsv1.JSONSchemaProps) error {
		if err := setMapValues(root, path, labelValue); err != nil {
			return fmt.Errorf("setting label values at %v, %w", path, err)
		}
		return nil
	}
}

// setMapValues sets the value schema of the map found at path below node.
func setMapValues(node *apiextensionsv1.JSONSchemaProps, path []string, value apiextensionsv1.JSONSchemaProps) error {
	child, ok := node.Properties[path[0]]
	if !ok {
		return fmt.Errorf("no property %q", path[0])
	}
	if len(path) == 1 {
		if child.AdditionalProperties == nil || child.AdditionalProperties.Schema == nil {
			return fmt.Errorf("%q is not a map", path[0])
		}
		value.Description = child.AdditionalProperties.Schema.Description
		child.AdditionalProperties.Schema = &value
	} else if err := setMapValues(&child, path[1:], value); err != nil {
		return err
	}
	node.Properties[path[0]] = child
	return nil
}

// patchFile applies patch to every version's schema in the CRD file.
func patchFile(file string, patch func(*apiextensionsv1.JSONSchemaProps) error) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("reading %s, %w", file, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		return fmt.Errorf("decoding %s, %w", file, err)
	}
	for i := range crd.Spec.Versions {
		if err := patch(crd.Spec.Versions[i].Schema.OpenAPIV3Schema); err != nil {
			return fmt.Errorf("patching %s, %w", file, err)
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return fmt.Errorf("encoding %s, %w", file, err)
	}
	return os.WriteFile(file, append([]byte("---\n"), out...), 0o644)
}
