package ami

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

// Latest is the alias version that follows the newest release.
const Latest = "latest"

// Alias is a parsed family@version alias.
type Alias struct {
	Family  string
	Version string
}

func (a Alias) String() string { return strings.ToLower(a.Family) + "@" + a.Version }

// ParseAlias finds the node class's alias term; ok is false when it has none.
func ParseAlias(nodeClass *awsv1.EC2NodeClass) (Alias, bool) {
	for _, t := range nodeClass.Spec.AMISelectorTerms {
		family, version, found := strings.Cut(t.Alias, "@")
		if !found {
			continue
		}
		for _, f := range []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025} {
			if strings.EqualFold(f, family) {
				return Alias{Family: f, Version: version}, true
			}
		}
	}
	return Alias{}, false
}

// Variant is the accelerator flavour of an EKS-optimized image.
type Variant string

// The variants of the EKS-optimized images.
const (
	Standard Variant = "standard"
	Nvidia   Variant = "nvidia"
	Neuron   Variant = "neuron"
)

// requirements are the instance requirements a variant serves: standard images serve instances with no
// GPU and no accelerator, nvidia images GPU instances, neuron images accelerator instances.
func (v Variant) requirements() []corev1.NodeSelectorRequirement {
	switch v {
	case Nvidia:
		return []corev1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}}
	case Neuron:
		return []corev1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists}}
	}
	return []corev1.NodeSelectorRequirement{
		{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
	}
}

// Windows builds, as the node.kubernetes.io/windows-build label carries them.
var windowsBuilds = map[string]string{
	awsv1.AMIFamilyWindows2019: "10.0.17763",
	awsv1.AMIFamilyWindows2022: "10.0.20348",
	awsv1.AMIFamilyWindows2025: "10.0.26100",
}

// parameter is an SSM parameter an alias reads and the requirement sets its image serves.
type parameter struct {
	path string
	reqs [][]corev1.NodeSelectorRequirement
}

// UnsupportedAliasError is an alias the cluster's Kubernetes version cannot use.
type UnsupportedAliasError struct{ msg string }

func (e *UnsupportedAliasError) Error() string { return e.msg }

// parameters lists the SSM parameters an alias reads for a Kubernetes version (major.minor), at the paths
// the EKS-optimized images are published under.
func (a Alias) parameters(k8s string) ([]parameter, error) {
	minor := 0
	if _, m, ok := strings.Cut(k8s, "."); ok {
		minor, _ = strconv.Atoi(m)
	}
	switch a.Family {
	case awsv1.AMIFamilyAL2023:
		var out []parameter
		for _, av := range []struct {
			arch    string
			variant Variant
		}{{"x86_64", Standard}, {"x86_64", Nvidia}, {"x86_64", Neuron}, {"arm64", Standard}, {"arm64", Nvidia}} {
			name := "recommended"
			if a.Version != Latest {
				name = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", av.arch, av.variant, k8s, a.Version)
			}
			out = append(out, parameter{
				path: fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id", k8s, av.arch, av.variant, name),
				reqs: [][]corev1.NodeSelectorRequirement{av.variant.requirements()},
			})
		}
		return out, nil
	case awsv1.AMIFamilyAL2:
		if minor >= 33 {
			return nil, &UnsupportedAliasError{"AL2 aliases are no longer supported on EKS 1.33+ (see https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions-standard.html#kubernetes-1-33)"}
		}
		var out []parameter
		for _, v := range []struct {
			suffix, prefix string
			variants       []Variant
		}{{"", "amazon-eks-node", []Variant{Standard}}, {"-arm64", "amazon-eks-arm64-node", []Variant{Standard}}, {"-gpu", "amazon-eks-gpu-node", []Variant{Neuron, Nvidia}}} {
			name := "recommended"
			if a.Version != Latest {
				name = fmt.Sprintf("%s-%s-%s", v.prefix, k8s, a.Version)
			}
			p := parameter{path: fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/%s/image_id", k8s, v.suffix, name)}
			for _, variant := range v.variants {
				p.reqs = append(p.reqs, variant.requirements())
			}
			out = append(out, p)
		}
		return out, nil
	case awsv1.AMIFamilyBottlerocket:
		version := strings.TrimLeft(a.Version, "v")
		return []parameter{
			{path: fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/x86_64/%s/image_id", k8s, version), reqs: [][]corev1.NodeSelectorRequirement{Standard.requirements(), Neuron.requirements()}},
			{path: fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/arm64/%s/image_id", k8s, version), reqs: [][]corev1.NodeSelectorRequirement{Standard.requirements()}},
			{path: fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s-nvidia/x86_64/%s/image_id", k8s, version), reqs: [][]corev1.NodeSelectorRequirement{Nvidia.requirements()}},
			{path: fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s-nvidia/arm64/%s/image_id", k8s, version), reqs: [][]corev1.NodeSelectorRequirement{Nvidia.requirements()}},
		}, nil
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		if a.Family == awsv1.AMIFamilyWindows2025 && minor < 35 {
			return nil, &UnsupportedAliasError{fmt.Sprintf("Windows Server 2025 requires EKS version 1.35 or higher, current version: %s", k8s)}
		}
		year := strings.TrimPrefix(a.Family, "Windows")
		return []parameter{{
			path: fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", year, k8s),
			reqs: [][]corev1.NodeSelectorRequirement{{
				{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{string(corev1.Windows)}},
				{Key: corev1.LabelWindowsBuild, Operator: corev1.NodeSelectorOpIn, Values: []string{windowsBuilds[a.Family]}},
			}},
		}}, nil
	}
	return nil, fmt.Errorf("alias family %q is not supported", a.Family)
}
