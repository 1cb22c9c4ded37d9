package convert_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lathe-autoscaler/lathe/pkg/convert"
)

const (
	templateBase = `apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata:
  name: default
spec:
  subnetSelector:
    karpenter.sh/discovery: my-cluster
  securityGroupSelector:
    karpenter.sh/discovery: my-cluster
`
	classBase = `apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata:
  name: default
spec:
  amiFamily: AL2023
  role: KarpenterNodeRole-my-cluster
  subnetSelectorTerms:
  - tags:
      karpenter.sh/discovery: my-cluster
  securityGroupSelectorTerms:
  - tags:
      karpenter.sh/discovery: my-cluster
`
)

// betaPool is a v1beta1 NodePool on EC2NodeClass "default" with the given kubelet block (YAML, indented
// for spec.template.spec) or none.
func betaPool(name, kubelet string) string {
	s := `apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  name: ` + name + `
spec:
  template:
    spec:
      requirements: []
      nodeClassRef:
        name: default
`
	if kubelet != "" {
		s += "      kubelet:\n        " + kubelet + "\n"
	}
	return s
}

// TestConvertErrors covers what the converter refuses: each case must fail, and the error must name the
// document (source and index) and the field, and say why.
func TestConvertErrors(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  []string
	}{{
		name:  "AWSNodeTemplate with a launch template",
		input: templateBase + "  launchTemplate: my-launch-template\n",
		want:  []string{"in.yaml, document 1 (AWSNodeTemplate default): spec.launchTemplate: cannot convert a launch template reference"},
	}, {
		name: "Provisioner whose inline provider has a launch template",
		input: `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  provider:
    launchTemplate: my-launch-template
    subnetSelector:
      karpenter.sh/discovery: my-cluster
    securityGroupSelector:
      karpenter.sh/discovery: my-cluster
`,
		want: []string{"document 1 (Provisioner default): spec.provider.launchTemplate: cannot convert a launch template reference"},
	}, {
		name:  "pools on one class with different kubelet blocks",
		input: classBase + "---\n" + betaPool("a", "maxPods: 20") + "---\n" + betaPool("b", "maxPods: 30"),
		want:  []string{"document 3 (NodePool b): spec.template.spec.kubelet: NodePools a, b use EC2NodeClass \"default\" with different kubelet settings", "give each pool its own EC2NodeClass"},
	}, {
		name:  "a pool with a kubelet block and one without on the same class",
		input: classBase + "---\n" + betaPool("a", "maxPods: 20") + "---\n" + betaPool("b", ""),
		want:  []string{"document 3 (NodePool b): spec.template.spec.kubelet: NodePools a, b use EC2NodeClass \"default\" with different kubelet settings"},
	}, {
		name:  "kubelet block whose class is not in the input",
		input: betaPool("a", "maxPods: 20"),
		want:  []string{"document 1 (NodePool a): spec.template.spec.kubelet: the kubelet block moves to EC2NodeClass \"default\" in v1, which is not among the converted documents"},
	}, {
		name: "Provisioner kubeletConfiguration whose template is not in the input",
		input: `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  providerRef:
    name: default
  kubeletConfiguration:
    maxPods: 20
`,
		want: []string{"document 1 (Provisioner default): spec.kubeletConfiguration: the kubelet block moves to EC2NodeClass \"default\""},
	}, {
		name: "kubelet block whose class is already v1",
		input: betaPool("a", "maxPods: 20") + `---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec: {}
`,
		want: []string{"document 1 (NodePool a): spec.template.spec.kubelet: the kubelet block moves to EC2NodeClass \"default\" in v1, which the input already has as v1"},
	}, {
		name:  "Ubuntu without amiSelectorTerms",
		input: strings.Replace(classBase, "amiFamily: AL2023", "amiFamily: Ubuntu", 1),
		want:  []string{"document 1 (EC2NodeClass default): spec.amiFamily: Ubuntu has no alias in v1"},
	}, {
		name:  "v1alpha1 Ubuntu without amiSelector",
		input: templateBase + "  amiFamily: Ubuntu\n",
		want:  []string{"document 1 (AWSNodeTemplate default): spec.amiFamily: Ubuntu has no alias in v1"},
	}, {
		name:  "Custom without amiSelectorTerms",
		input: strings.Replace(classBase, "amiFamily: AL2023", "amiFamily: Custom", 1),
		want:  []string{"spec.amiSelectorTerms: required with amiFamily Custom"},
	}, {
		name:  "v1beta1 class without amiFamily",
		input: strings.Replace(classBase, "  amiFamily: AL2023\n", "", 1),
		want:  []string{"spec.amiFamily: required in v1beta1"},
	}, {
		name:  "AMI selector with only owners",
		input: templateBase + "  amiFamily: AL2\n  amiSelector:\n    aws::owners: self\n",
		want:  []string{"document 1 (AWSNodeTemplate default): spec.amiSelector: a term with only an owner selects nothing in v1"},
	}, {
		name:  "AWSNodeTemplate without subnetSelector",
		input: strings.Replace(templateBase, "  subnetSelector:\n    karpenter.sh/discovery: my-cluster\n", "", 1),
		want:  []string{"document 1 (AWSNodeTemplate default): spec.subnetSelector: required"},
	}, {
		name:  "v1beta1 class without role or instanceProfile",
		input: strings.Replace(classBase, "  role: KarpenterNodeRole-my-cluster\n", "", 1),
		want:  []string{"spec.role: required"},
	}, {
		name:  "Machine",
		input: "apiVersion: karpenter.sh/v1alpha5\nkind: Machine\nmetadata:\n  name: default-abcde\n",
		want:  []string{"document 1 (Machine default-abcde): kind: Machine objects are created by Karpenter"},
	}, {
		name:  "Provisioner of an unknown version",
		input: "apiVersion: karpenter.sh/v1alpha4\nkind: Provisioner\nmetadata:\n  name: default\n",
		want:  []string{"apiVersion: cannot convert karpenter.sh/v1alpha4 Provisioner"},
	}, {
		name:  "a field v1beta1 never had",
		input: strings.Replace(classBase, "  role:", "  rol: typo\n  role:", 1),
		want:  []string{"document 1 (EC2NodeClass default): decoding v1beta1 EC2NodeClass", `unknown field "spec.rol"`},
	}, {
		name: "a container runtime v1 does not run",
		input: `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  providerRef:
    name: default
  kubeletConfiguration:
    containerRuntime: dockerd
---
` + templateBase,
		want: []string{"document 1 (Provisioner default): spec.kubeletConfiguration.containerRuntime: \"dockerd\" is not supported"},
	}, {
		name:  "Provisioner without a provider",
		input: "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: default\nspec: {}\n",
		want:  []string{"document 1 (Provisioner default): spec.providerRef: required"},
	}, {
		name:  "providerRef to another kind",
		input: "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: default\nspec:\n  providerRef:\n    kind: MyNodeTemplate\n    name: x\n",
		want:  []string{"spec.providerRef.kind: \"MyNodeTemplate\": only AWSNodeTemplate references are converted"},
	}, {
		name: "inline provider named like an AWSNodeTemplate",
		input: templateBase + `---
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  provider:
    instanceProfile: p
    subnetSelector:
      karpenter.sh/discovery: my-cluster
    securityGroupSelector:
      karpenter.sh/discovery: my-cluster
`,
		want: []string{"document 2 (Provisioner default): metadata.name: EC2NodeClass \"default\" is also produced by in.yaml, document 1"},
	}, {
		name:  "unknown consolidation policy",
		input: strings.Replace(betaPool("a", ""), "  template:", "  disruption:\n    consolidationPolicy: Sometimes\n  template:", 1),
		want:  []string{"spec.disruption.consolidationPolicy: unknown policy \"Sometimes\""},
	}, {
		name:  "a tag v1 reserves",
		input: templateBase + "  tags:\n    kubernetes.io/cluster/my-cluster: owned\n",
		want:  []string{"document 1 (AWSNodeTemplate default): spec.tags: tag \"kubernetes.io/cluster/my-cluster\" is restricted in v1"},
	}, {
		name:  "missing kind",
		input: "apiVersion: karpenter.sh/v1beta1\nmetadata:\n  name: x\n",
		want:  []string{"document 1: apiVersion and kind must be set"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := convert.ReadDocuments("in.yaml", strings.NewReader(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			res, err := convert.Convert(docs, convert.Options{})
			if err == nil {
				out, _ := res.YAML()
				t.Fatalf("converted, want an error; output:\n%s", out)
			}
			var problems convert.Errors
			if !errors.As(err, &problems) {
				t.Fatalf("error %v is not convert.Errors", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestConvertReportsEveryProblem checks that one run lists the problems of all documents, not just the first.
func TestConvertReportsEveryProblem(t *testing.T) {
	input := templateBase + "  launchTemplate: lt\n---\n" +
		strings.Replace(classBase, "amiFamily: AL2023", "amiFamily: Ubuntu", 1)
	docs, err := convert.ReadDocuments("in.yaml", strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	_, err = convert.Convert(docs, convert.Options{})
	var problems convert.Errors
	if !errors.As(err, &problems) || len(problems) != 2 {
		t.Fatalf("want 2 problems, got %v", err)
	}
	if problems[0].Doc.Index != 1 || problems[1].Doc.Index != 2 {
		t.Errorf("problems name documents %d and %d, want 1 and 2", problems[0].Doc.Index, problems[1].Doc.Index)
	}
}

// TestConvertNothing checks that input without Karpenter objects is an error, as upstream's "no objects
// passed to convert".
func TestConvertNothing(t *testing.T) {
	docs, err := convert.ReadDocuments("in.yaml", strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := convert.Convert(docs, convert.Options{}); !errors.Is(err, convert.ErrNothingToConvert) {
		t.Fatalf("got %v, want ErrNothingToConvert", err)
	}
}
