package userdata

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

func withUserData(family, userData string) Options {
	o := options(family)
	o.CustomUserData = ptr(userData)
	return o
}

// TestAL2023MergesMIME: the class's MIME parts come first, unchanged, then Lathe's NodeConfig; nodeadm merges
// the NodeConfigs so the class's extra kubelet settings stay and Lathe's cluster, max pods and taints win.
func TestAL2023MergesMIME(t *testing.T) {
	doc := render(t, withUserData(awsv1.AMIFamilyAL2023, userMIME))
	types, bodies := mimeParts(t, doc)
	want := []string{`text/x-shellscript; charset="us-ascii"`, "application/node.eks.aws", "application/node.eks.aws"}
	if !reflect.DeepEqual(types, want) {
		t.Fatalf("parts = %v, want %v", types, want)
	}
	if !strings.Contains(bodies[0], `echo "from the node class"`) {
		t.Errorf("the class's script changed: %q", bodies[0])
	}
	n, err := Parse(awsv1.AMIFamilyAL2023, doc)
	if err != nil {
		t.Fatal(err)
	}
	if n.KubeletConfig["shutdownGracePeriod"] != "30s" {
		t.Errorf("the class's shutdownGracePeriod was lost: %v", n.KubeletConfig)
	}
	if len(n.Scripts) != 1 || !strings.Contains(n.Scripts[0], "from the node class") {
		t.Errorf("scripts = %q, want the class's script", n.Scripts)
	}
	if n.ClusterName != "demo" || n.MaxPods == nil || *n.MaxPods != 29 {
		t.Errorf("node = %+v", n)
	}
}

// TestAL2023MergesBareNodeConfig: a bare NodeConfig becomes its own part; its flags accumulate with Lathe's
// and Lathe's max pods (last) wins over the class's.
func TestAL2023MergesBareNodeConfig(t *testing.T) {
	doc := render(t, withUserData(awsv1.AMIFamilyAL2023, userNodeConfig))
	types, bodies := mimeParts(t, doc)
	if !reflect.DeepEqual(types, []string{"application/node.eks.aws", "application/node.eks.aws"}) || bodies[0] != userNodeConfig {
		t.Fatalf("parts = %v, first = %q", types, bodies[0])
	}
	n, err := Parse(awsv1.AMIFamilyAL2023, doc)
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels["user"] != "label" || n.Labels["team"] != "web" {
		t.Errorf("labels = %v, want the class's user=label and the claim's team=web", n.Labels)
	}
	if n.MaxPods == nil || *n.MaxPods != 29 {
		t.Errorf("max pods = %v, want Lathe's 29 over the class's 50", n.MaxPods)
	}
}

// TestAL2023MergesShell: user data that is not a YAML mapping is a shell script part.
func TestAL2023MergesShell(t *testing.T) {
	script := "#!/bin/bash\necho hello\n"
	types, bodies := mimeParts(t, render(t, withUserData(awsv1.AMIFamilyAL2023, script)))
	if !reflect.DeepEqual(types, []string{`text/x-shellscript; charset="us-ascii"`, "application/node.eks.aws"}) || bodies[0] != script {
		t.Fatalf("parts = %v, first = %q", types, bodies[0])
	}
}

// TestAL2MergesShell: the class's script runs first, then the bootstrap.
func TestAL2MergesShell(t *testing.T) {
	script := "#!/bin/bash\necho hello\n"
	doc := render(t, withUserData(awsv1.AMIFamilyAL2, script))
	types, bodies := mimeParts(t, doc)
	if len(types) != 2 || bodies[0] != script || !strings.Contains(bodies[1], "/etc/eks/bootstrap.sh") {
		t.Fatalf("parts = %v %q", types, bodies)
	}
	n, err := Parse(awsv1.AMIFamilyAL2, doc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(n.Scripts, []string{script}) || n.ClusterName != "demo" {
		t.Errorf("node = %+v", n)
	}
}

// TestAL2MergesMIME: a MIME userData keeps its parts ahead of the bootstrap part.
func TestAL2MergesMIME(t *testing.T) {
	types, _ := mimeParts(t, render(t, withUserData(awsv1.AMIFamilyAL2, userMIME)))
	if len(types) != 3 || types[1] != "application/node.eks.aws" || types[2] != `text/x-shellscript; charset="us-ascii"` {
		t.Fatalf("parts = %v", types)
	}
}

// TestBottlerocketMerges: the class's settings stay (other tables, kubernetes keys Lathe does not set, labels,
// settings the node class's kubelet does not set) while the cluster, max pods, taints and the claim's
// labels are Lathe's; kubernetes keys Bottlerocket does not know are dropped, as upstream drops them.
func TestBottlerocketMerges(t *testing.T) {
	o := withUserData(awsv1.AMIFamilyBottlerocket, userBottlerocket)
	doc := render(t, o)
	n, err := Parse(awsv1.AMIFamilyBottlerocket, doc)
	if err != nil {
		t.Fatal(err)
	}
	if n.ClusterName != "demo" || n.ClusterEndpoint != o.ClusterEndpoint || *n.MaxPods != 29 {
		t.Errorf("cluster/max pods = %q %q %d, want Lathe's", n.ClusterName, n.ClusterEndpoint, *n.MaxPods)
	}
	if n.Labels["user"] != "label" || n.Labels["team"] != "web" {
		t.Errorf("labels = %v, want the class's user=label kept and the claim's team=web over mobile", n.Labels)
	}
	for _, taint := range n.Taints {
		if taint.Key == "user" {
			t.Errorf("the class's node-taints were kept: %v", n.Taints)
		}
	}
	if _, ok := n.KubeletConfig["unknown-setting"]; ok {
		t.Errorf("a settings.kubernetes key Bottlerocket does not know was kept")
	}
	if n.KubeletConfig["image-gc-high-threshold-percent"] != "90" {
		t.Errorf("image-gc-high-threshold-percent = %v, want the class's 90", n.KubeletConfig["image-gc-high-threshold-percent"])
	}
	if !strings.Contains(doc, "[settings.host-containers.admin]\nenabled = true") || !strings.Contains(doc, "allowed-unsafe-sysctls = ['net.core.somaxconn']") {
		t.Errorf("the class's other settings were lost:\n%s", doc)
	}
	o.Kubelet = &awsv1.KubeletConfiguration{ImageGCHighThresholdPercent: ptr(int32(70))}
	n = renderParse(t, o)
	if n.KubeletConfig["image-gc-high-threshold-percent"] != "70" {
		t.Errorf("image-gc-high-threshold-percent = %v, want the node class's kubelet 70", n.KubeletConfig["image-gc-high-threshold-percent"])
	}
}

// TestWindowsMerges: the class's PowerShell runs inside the block, before the bootstrap.
func TestWindowsMerges(t *testing.T) {
	doc := render(t, withUserData(awsv1.AMIFamilyWindows2022, "Write-Host 'hello'"))
	if !strings.HasPrefix(doc, "<powershell>\nWrite-Host 'hello'\n[string]$EKSBootstrapScriptFile") {
		t.Errorf("the class's script is not first in the block:\n%s", doc)
	}
	if _, err := Parse(awsv1.AMIFamilyWindows2022, doc); err != nil {
		t.Error(err)
	}
}

// TestCustomIsVerbatim: Custom renders the class's userData unchanged, and the node reads whichever format it
// is in.
func TestCustomIsVerbatim(t *testing.T) {
	al2023 := render(t, options(awsv1.AMIFamilyAL2023))
	for _, userData := range []string{al2023, "#!/bin/bash\n/etc/eks/bootstrap.sh 'demo' --kubelet-extra-args '--node-labels=a=b'\n"} {
		o := withUserData(awsv1.AMIFamilyCustom, userData)
		o.Labels = map[string]string{"ignored": "true"}
		doc := render(t, o)
		if doc != userData {
			t.Fatalf("Custom changed the userData:\n%s", doc)
		}
		n, err := Parse(awsv1.AMIFamilyCustom, doc)
		if err != nil {
			t.Fatal(err)
		}
		if n.ClusterName != "demo" || n.Labels["ignored"] != "" {
			t.Errorf("node = %+v", n)
		}
	}
	if doc := render(t, options(awsv1.AMIFamilyCustom)); doc != "" {
		t.Errorf("Custom without userData = %q, want empty", doc)
	}
	n, err := Parse(awsv1.AMIFamilyCustom, render(t, options(awsv1.AMIFamilyBottlerocket)))
	if err != nil || n.ClusterName != "demo" {
		t.Errorf("Custom Bottlerocket TOML: %+v %v", n, err)
	}
	n, err = Parse(awsv1.AMIFamilyCustom, render(t, options(awsv1.AMIFamilyWindows2019)))
	if err != nil || !reflect.DeepEqual(n.Taints[0], corev1.Taint{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}) {
		t.Errorf("Custom PowerShell: %+v %v", n, err)
	}
}

// TestAL2023MergesKubeletConfigDeeply: nodeadm merges nested kubelet settings key by key, so the class's
// kubeReserved memory survives Lathe's kubeReserved cpu.
func TestAL2023MergesKubeletConfigDeeply(t *testing.T) {
	o := withUserData(awsv1.AMIFamilyAL2023, "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      kubeReserved:\n        memory: 1Gi\n        cpu: 1\n")
	o.Kubelet = &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"cpu": "200m"}}
	n := renderParse(t, o)
	want := map[string]any{"memory": "1Gi", "cpu": "200m"}
	if got := n.KubeletConfig["kubeReserved"]; !reflect.DeepEqual(got, want) {
		t.Errorf("kubeReserved = %v, want %v", got, want)
	}
}
