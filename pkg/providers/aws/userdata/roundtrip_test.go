package userdata

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

var bootFamilies = []string{
	awsv1.AMIFamilyAL2023, awsv1.AMIFamilyAL2, awsv1.AMIFamilyBottlerocket,
	awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025,
}

func render(t *testing.T, o Options) string {
	t.Helper()
	doc, err := Render(o)
	if err != nil {
		t.Fatalf("Render(%s): %v", o.Family, err)
	}
	return doc
}

func renderParse(t *testing.T, o Options) Node {
	t.Helper()
	doc := render(t, o)
	n, err := Parse(o.Family, doc)
	if err != nil {
		t.Fatalf("Parse(%s): %v\n%s", o.Family, err, doc)
	}
	return n
}

// TestRoundTrip: the node reads back the cluster, labels (restricted ones dropped, do-not-sync-taints added),
// taints and startup taints (plus the unregistered taint), max pods and cluster DNS it was rendered with.
func TestRoundTrip(t *testing.T) {
	wantTaints := []corev1.Taint{
		{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule},
		{Key: "example.com/startup", Effect: corev1.TaintEffectNoExecute},
		{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
	}
	wantLabels := map[string]string{"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "on-demand", "team": "web", "karpenter.sh/do-not-sync-taints": "true"}
	for _, family := range bootFamilies {
		t.Run(family, func(t *testing.T) {
			o := options(family)
			o.Kubelet = kubelet()
			n := renderParse(t, o)
			if n.ClusterName != "demo" || n.ClusterEndpoint != o.ClusterEndpoint || n.ClusterCABundle != testCA {
				t.Errorf("cluster = %q %q %q, want demo %q %q", n.ClusterName, n.ClusterEndpoint, n.ClusterCABundle, o.ClusterEndpoint, testCA)
			}
			if !reflect.DeepEqual(n.Labels, wantLabels) {
				t.Errorf("labels = %v, want %v", n.Labels, wantLabels)
			}
			if !reflect.DeepEqual(n.Taints, wantTaints) {
				t.Errorf("taints = %v, want %v", n.Taints, wantTaints)
			}
			if n.MaxPods == nil || *n.MaxPods != 29 {
				t.Errorf("max pods = %v, want 29", n.MaxPods)
			}
			if !reflect.DeepEqual(n.ClusterDNS, []string{"10.100.0.10"}) {
				t.Errorf("cluster DNS = %v, want [10.100.0.10]", n.ClusterDNS)
			}
		})
	}
}

// TestKubeletOverrides: kubelet.maxPods and kubelet.clusterDNS win over the computed pods and the discovered DNS.
func TestKubeletOverrides(t *testing.T) {
	for _, family := range bootFamilies {
		t.Run(family, func(t *testing.T) {
			o := options(family)
			o.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr(int32(110)), ClusterDNS: []string{"169.254.20.10"}}
			n := renderParse(t, o)
			if n.MaxPods == nil || *n.MaxPods != 110 {
				t.Errorf("max pods = %v, want 110", n.MaxPods)
			}
			if !reflect.DeepEqual(n.ClusterDNS, []string{"169.254.20.10"}) {
				t.Errorf("cluster DNS = %v, want [169.254.20.10]", n.ClusterDNS)
			}
		})
	}
}

// TestNoLabelsOnlyUnregistered: a claim without labels or taints still registers with the unregistered taint
// (and the do-not-sync-taints label),
// and it is not doubled when the claim carries it already.
func TestNoLabelsOnlyUnregistered(t *testing.T) {
	unregistered := []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}}
	for _, family := range bootFamilies {
		t.Run(family, func(t *testing.T) {
			o := options(family)
			o.Labels = nil
			o.Taints = nil
			n := renderParse(t, o)
			if want := map[string]string{"karpenter.sh/do-not-sync-taints": "true"}; !reflect.DeepEqual(n.Labels, want) {
				t.Errorf("labels = %v, want %v", n.Labels, want)
			}
			if !reflect.DeepEqual(n.Taints, unregistered) {
				t.Errorf("taints = %v, want %v", n.Taints, unregistered)
			}
			o.Taints = append([]corev1.Taint{}, unregistered...)
			if n := renderParse(t, o); !reflect.DeepEqual(n.Taints, unregistered) {
				t.Errorf("with the taint given: taints = %v, want %v", n.Taints, unregistered)
			}
		})
	}
}

// TestTaintOrderIsIrrelevant: the same taints in another order render the same document.
func TestTaintOrderIsIrrelevant(t *testing.T) {
	for _, family := range bootFamilies {
		o := options(family)
		reversed := options(family)
		reversed.Taints = []corev1.Taint{o.Taints[1], o.Taints[0]}
		if render(t, o) != render(t, reversed) {
			t.Errorf("%s: reordering the taints changed the document", family)
		}
	}
}

// TestAL2023DNSFromCIDR: without a known cluster DNS, nodeadm derives it from the service CIDR.
func TestAL2023DNSFromCIDR(t *testing.T) {
	o := options(awsv1.AMIFamilyAL2023)
	o.ClusterDNS = nil
	o.ClusterCIDR = "172.20.0.0/16"
	if n := renderParse(t, o); !reflect.DeepEqual(n.ClusterDNS, []string{"172.20.0.10"}) {
		t.Errorf("cluster DNS = %v, want [172.20.0.10]", n.ClusterDNS)
	}
}

// TestInstanceStoreRAID0: RAID0 reaches the node for AL2023, AL2 and Bottlerocket, and only when asked for.
func TestInstanceStoreRAID0(t *testing.T) {
	for _, family := range []string{awsv1.AMIFamilyAL2023, awsv1.AMIFamilyAL2, awsv1.AMIFamilyBottlerocket} {
		o := options(family)
		if n := renderParse(t, o); n.InstanceStoreRAID0 {
			t.Errorf("%s: RAID0 without an instance store policy", family)
		}
		o.InstanceStorePolicy = ptr(awsv1.InstanceStorePolicyRAID0)
		if n := renderParse(t, o); !n.InstanceStoreRAID0 {
			t.Errorf("%s: the RAID0 instance store policy did not reach the node", family)
		}
	}
}

// TestIPv6ClusterDNS: an IPv6 cluster DNS makes AL2 bootstrap in the IPv6 family, and every family reads it back.
func TestIPv6ClusterDNS(t *testing.T) {
	for _, family := range bootFamilies {
		o := options(family)
		o.ClusterDNS = []string{"fd00:10:96::a"}
		doc := render(t, o)
		if family == awsv1.AMIFamilyAL2 && !strings.Contains(doc, "--ip-family ipv6") {
			t.Errorf("AL2 does not bootstrap with --ip-family ipv6:\n%s", doc)
		}
		n, err := Parse(family, doc)
		if err != nil {
			t.Fatalf("%s: %v", family, err)
		}
		if !reflect.DeepEqual(n.ClusterDNS, []string{"fd00:10:96::a"}) {
			t.Errorf("%s: cluster DNS = %v", family, n.ClusterDNS)
		}
	}
}
