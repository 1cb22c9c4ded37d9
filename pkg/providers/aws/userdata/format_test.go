package userdata

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"os/exec"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

// mimeParts reads doc with the standard library alone and returns each part's Content-Type and body.
func mimeParts(t *testing.T, doc string) (types, bodies []string) {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("not a MIME message: %v", err)
	}
	if v := msg.Header.Get("MIME-Version"); v != "1.0" {
		t.Errorf("MIME-Version = %q, want 1.0", v)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" {
		t.Fatalf("Content-Type = %q (%v), want multipart/mixed", mt, err)
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			return types, bodies
		}
		if err != nil {
			t.Fatalf("reading a part: %v", err)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			t.Fatalf("reading a part: %v", err)
		}
		types = append(types, p.Header.Get("Content-Type"))
		bodies = append(bodies, string(body))
	}
}

// strictNodeConfig is nodeadm's NodeConfig as far as Lathe writes it; decoding is strict, so a misspelled
// field fails.
type strictNodeConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Cluster struct {
			Name                 string `json:"name"`
			APIServerEndpoint    string `json:"apiServerEndpoint"`
			CertificateAuthority []byte `json:"certificateAuthority"`
			CIDR                 string `json:"cidr"`
		} `json:"cluster"`
		Kubelet struct {
			Config map[string]any `json:"config"`
			Flags  []string       `json:"flags"`
		} `json:"kubelet"`
		Instance struct {
			LocalStorage struct {
				Strategy string `json:"strategy"`
			} `json:"localStorage"`
		} `json:"instance"`
	} `json:"spec"`
}

// TestAL2023IsMIMEWithANodeConfig: a multipart/mixed document whose one part is application/node.eks.aws
// YAML that decodes strictly as a node.eks.aws/v1alpha1 NodeConfig.
func TestAL2023IsMIMEWithANodeConfig(t *testing.T) {
	o := options(awsv1.AMIFamilyAL2023)
	o.Kubelet = kubelet()
	o.InstanceStorePolicy = ptr(awsv1.InstanceStorePolicyRAID0)
	types, bodies := mimeParts(t, render(t, o))
	if len(types) != 1 || types[0] != "application/node.eks.aws" {
		t.Fatalf("parts = %v, want one application/node.eks.aws", types)
	}
	var c strictNodeConfig
	if err := yaml.UnmarshalStrict([]byte(bodies[0]), &c); err != nil {
		t.Fatalf("NodeConfig is not strict YAML: %v\n%s", err, bodies[0])
	}
	if c.APIVersion != "node.eks.aws/v1alpha1" || c.Kind != "NodeConfig" {
		t.Errorf("apiVersion/kind = %s/%s", c.APIVersion, c.Kind)
	}
	if c.Spec.Cluster.Name != "demo" || c.Spec.Cluster.CIDR != "10.100.0.0/16" || !strings.HasPrefix(string(c.Spec.Cluster.CertificateAuthority), "-----BEGIN CERTIFICATE-----") {
		t.Errorf("cluster = %+v, want demo, 10.100.0.0/16 and the decoded PEM", c.Spec.Cluster)
	}
	if c.Spec.Instance.LocalStorage.Strategy != "RAID0" {
		t.Errorf("localStorage.strategy = %q, want RAID0", c.Spec.Instance.LocalStorage.Strategy)
	}
	for _, key := range []string{"maxPods", "clusterDNS", "registerWithTaints", "podsPerCore", "kubeReserved", "systemReserved", "evictionHard", "evictionSoft", "evictionSoftGracePeriod", "evictionMaxPodGracePeriod", "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "cpuCFSQuota"} {
		if _, ok := c.Spec.Kubelet.Config[key]; !ok {
			t.Errorf("kubelet config has no %s", key)
		}
	}
}

// TestAL2IsMIMEWithAShellScript: a multipart/mixed document whose shell part is valid bash calling bootstrap.sh.
func TestAL2IsMIMEWithAShellScript(t *testing.T) {
	o := options(awsv1.AMIFamilyAL2)
	o.Kubelet = kubelet()
	o.InstanceStorePolicy = ptr(awsv1.InstanceStorePolicyRAID0)
	types, bodies := mimeParts(t, render(t, o))
	if len(types) != 1 || types[0] != `text/x-shellscript; charset="us-ascii"` {
		t.Fatalf("parts = %v, want one text/x-shellscript", types)
	}
	if !strings.HasPrefix(bodies[0], "#!/bin/bash") || !strings.Contains(bodies[0], "/etc/eks/bootstrap.sh 'demo'") {
		t.Errorf("shell part does not call bootstrap.sh:\n%s", bodies[0])
	}
	for _, flag := range []string{"--apiserver-endpoint", "--b64-cluster-ca", "--dns-cluster-ip", "--use-max-pods false", "--kubelet-extra-args", "--local-disks raid0"} {
		if !strings.Contains(bodies[0], flag) {
			t.Errorf("bootstrap call has no %s", flag)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed to check the script's syntax: %v", err)
	}
	cmd := exec.Command(bash, "-n")
	cmd.Stdin = strings.NewReader(bodies[0])
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("bash -n: %v %s", err, stderr.String())
	}
}

// TestBottlerocketIsTOML: the document decodes strictly into Bottlerocket's settings as Lathe writes them.
func TestBottlerocketIsTOML(t *testing.T) {
	o := options(awsv1.AMIFamilyBottlerocket)
	o.Kubelet = kubelet()
	var settings struct {
		Settings struct {
			Kubernetes struct {
				ClusterName                 string              `toml:"cluster-name"`
				APIServer                   string              `toml:"api-server"`
				ClusterCertificate          string              `toml:"cluster-certificate"`
				ClusterDNSIP                string              `toml:"cluster-dns-ip"`
				MaxPods                     int                 `toml:"max-pods"`
				NodeLabels                  map[string]string   `toml:"node-labels"`
				NodeTaints                  map[string][]string `toml:"node-taints"`
				SystemReserved              map[string]string   `toml:"system-reserved"`
				KubeReserved                map[string]string   `toml:"kube-reserved"`
				EvictionHard                map[string]string   `toml:"eviction-hard"`
				EvictionSoft                map[string]string   `toml:"eviction-soft"`
				EvictionSoftGracePeriod     map[string]string   `toml:"eviction-soft-grace-period"`
				EvictionMaxPodGracePeriod   int                 `toml:"eviction-max-pod-grace-period"`
				ImageGCHighThresholdPercent string              `toml:"image-gc-high-threshold-percent"`
				ImageGCLowThresholdPercent  string              `toml:"image-gc-low-threshold-percent"`
				CPUCFSQuotaEnforced         bool                `toml:"cpu-cfs-quota-enforced"`
			} `toml:"kubernetes"`
		} `toml:"settings"`
	}
	d := toml.NewDecoder(strings.NewReader(render(t, o)))
	d.DisallowUnknownFields()
	if err := d.Decode(&settings); err != nil {
		t.Fatalf("not Bottlerocket TOML: %v", err)
	}
	k := settings.Settings.Kubernetes
	if k.ClusterName != "demo" || k.APIServer != o.ClusterEndpoint || k.ClusterCertificate != testCA || k.ClusterDNSIP != "10.100.0.10" || k.MaxPods != 29 {
		t.Errorf("settings.kubernetes = %+v", k)
	}
	if got := k.NodeTaints["dedicated"]; len(got) != 1 || got[0] != "web:NoSchedule" {
		t.Errorf("node-taints.dedicated = %v, want [web:NoSchedule]", got)
	}
	if k.ImageGCHighThresholdPercent != "85" || k.EvictionMaxPodGracePeriod != 60 || k.CPUCFSQuotaEnforced {
		t.Errorf("kubelet settings = %+v", k)
	}
}

// TestWindowsIsAPowerShellBlock: one <powershell> block that calls Start-EKSBootstrap.ps1 with -KubeletExtraArgs.
func TestWindowsIsAPowerShellBlock(t *testing.T) {
	for _, family := range []string{awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025} {
		doc := render(t, options(family))
		if !strings.HasPrefix(doc, "<powershell>\n") || !strings.HasSuffix(doc, "\n</powershell>") || strings.Count(doc, "<powershell>") != 1 {
			t.Errorf("%s: not one <powershell> block:\n%s", family, doc)
		}
		if !strings.Contains(doc, `\Amazon\EKS\Start-EKSBootstrap.ps1"`) || !strings.Contains(doc, "-KubeletExtraArgs '--node-labels=") {
			t.Errorf("%s: no bootstrap call with -KubeletExtraArgs:\n%s", family, doc)
		}
	}
}
