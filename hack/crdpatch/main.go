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

// quantityPattern matches a resource quantity, and evictionPattern a quantity or a percentage, as the value
// patterns of Karpenter's EC2NodeClass kubelet maps do.
const (
	quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`
	evictionPattern = `^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$`
)

var (
	quantityValue = apiextensionsv1.JSONSchemaProps{Type: "string", Pattern: quantityPattern}
	evictionValue = apiextensionsv1.JSONSchemaProps{Type: "string", Pattern: evictionPattern}
)

// mapValues returns a patch that sets the value schema of the map at path.
func mapValues(value apiextensionsv1.JSONSchemaProps, path ...string) func(*apiextensionsv1.JSONSchemaProps) error {
	return func(root *apiextensionsv1.JSONSchemaProps) error {
		if err := setMapValues(root, path, value); err != nil {
			return fmt.Errorf("setting map values at %v, %w", path, err)
		}
		return nil
	}
}

// qualifiedTaintPart is the pattern Karpenter's CRDs give taint keys and values.
const qualifiedTaintPart = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdpatch CRD_DIR")
		os.Exit(2)
	}
	template := []string{"spec", "template", "spec"}
	patches := map[string][]func(*apiextensionsv1.JSONSchemaProps) error{
		"karpenter.sh_nodepools.yaml": {
			labelValues("spec", "template", "metadata", "labels"),
			taints(append(template, "taints")...), taints(append(template, "startupTaints")...),
			requirementValues(append(template, "requirements")...),
		},
		"karpenter.k8s.aws_ec2nodeclasses.yaml": {
			mapValues(quantityValue, "spec", "kubelet", "kubeReserved"), mapValues(quantityValue, "spec", "kubelet", "systemReserved"),
			mapValues(evictionValue, "spec", "kubelet", "evictionHard"), mapValues(evictionValue, "spec", "kubelet", "evictionSoft"),
		},
		"karpenter.sh_nodeclaims.yaml": {
			taints("spec", "taints"), taints("spec", "startupTaints"),
			requirementValues("spec", "requirements"),
		},
	}
	for file, fs := range patches {
		for _, patch := range fs {
			if err := patchFile(filepath.Join(os.Args[1], file), patch); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	}
}

// taints returns a patch that constrains the items of the taint list at path as Karpenter's CRDs do: a
// non-empty qualified key, a qualified value and one of the three effects.
func taints(path ...string) func(*apiextensionsv1.JSONSchemaProps) error {
	return func(root *apiextensionsv1.JSONSchemaProps) error {
		return atPath(root, path, func(list *apiextensionsv1.JSONSchemaProps) error {
			if list.Items == nil || list.Items.Schema == nil {
				return fmt.Errorf("%v is not a list", path)
			}
			item := list.Items.Schema
			key, value, effect := item.Properties["key"], item.Properties["value"], item.Properties["effect"]
			key.MinLength, key.Pattern = ptr.To(int64(1)), qualifiedTaintPart
			value.Pattern = qualifiedTaintPart
			effect.Enum = nil
			for _, e := range []string{"NoSchedule", "PreferNoSchedule", "NoExecute"} {
				effect.Enum = append(effect.Enum, apiextensionsv1.JSON{Raw: []byte(`"` + e + `"`)})
			}
			item.Properties["key"], item.Properties["value"], item.Properties["effect"] = key, value, effect
			return nil
		})
	}
}

// requirementValues returns a patch that puts the label-value length and pattern on the values list of the
// requirements at path, where Karpenter's CRDs have them. On a list the API server checks neither, so values
// are not checked on admission, as in Karpenter; the pool's validation reports bad values.
func requirementValues(path ...string) func(*apiextensionsv1.JSONSchemaProps) error {
	return func(root *apiextensionsv1.JSONSchemaProps) error {
		return atPath(root, path, func(list *apiextensionsv1.JSONSchemaProps) error {
			if list.Items == nil || list.Items.Schema == nil {
				return fmt.Errorf("%v is not a list", path)
			}
			values := list.Items.Schema.Properties["values"]
			values.MaxLength, values.Pattern = labelValue.MaxLength, labelValue.Pattern
			list.Items.Schema.Properties["values"] = values
			return nil
		})
	}
}

// atPath calls edit on the property found at path below node and stores the edited copy back.
func atPath(node *apiextensionsv1.JSONSchemaProps, path []string, edit func(*apiextensionsv1.JSONSchemaProps) error) error {
	child, ok := node.Properties[path[0]]
	if !ok {
		return fmt.Errorf("no property %q", path[0])
	}
	var err error
	if len(path) == 1 {
		err = edit(&child)
	} else {
		err = atPath(&child, path[1:], edit)
	}
	if err != nil {
		return err
	}
	node.Properties[path[0]] = child
	return nil
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
