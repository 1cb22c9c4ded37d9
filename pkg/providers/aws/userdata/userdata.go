package userdata

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	karpv1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Options is everything a node needs from its user data to join the cluster as a NodeClaim's node.
type Options struct {
	// Family is the node class's AMI family (awsv1.AMIFamily*).
	Family          string
	ClusterName     string
	ClusterEndpoint string
	// ClusterCABundle is the base64-encoded PEM bundle, as EKS DescribeCluster returns it.
	ClusterCABundle string
	// ClusterCIDR is the service IPv4 CIDR; AL2023's NodeConfig requires it.
	ClusterCIDR string
	// ClusterDNS is the cluster DNS the kubelet uses when the node class's kubelet.clusterDNS is unset (the
	// kube-dns service IP); kubelet.clusterDNS wins.
	ClusterDNS []string
	// Kubelet is the EC2NodeClass's spec.kubelet.
	Kubelet *awsv1.KubeletConfiguration
	// MaxPods is the pods capacity computed for the instance type, written when kubelet.maxPods is unset.
	MaxPods *int32
	// Labels are the NodeClaim's labels to register with.
	Labels map[string]string
	// Taints are the NodeClaim's taints and startup taints.
	Taints []corev1.Taint
	// CustomUserData is the EC2NodeClass's spec.userData.
	CustomUserData *string
	// InstanceStorePolicy is the EC2NodeClass's spec.instanceStorePolicy.
	InstanceStorePolicy *awsv1.InstanceStorePolicy
}

// Node is what a node reads from its user data when it boots.
type Node struct {
	ClusterName     string
	ClusterEndpoint string
	// ClusterCABundle is base64-encoded PEM, as in Options.
	ClusterCABundle string
	// ClusterDNS is empty when the document leaves it to the node (bootstrap.sh and Bottlerocket then find it
	// themselves); nodeadm derives it from the service CIDR, which Parse does too.
	ClusterDNS []string
	// Labels and Taints are what the kubelet registers the Node with; Taints are sorted.
	Labels map[string]string
	Taints []corev1.Taint
	// MaxPods is nil when the document leaves it to the node (its ENI-based default).
	MaxPods *int32
	// KubeletArgs are the kubelet flags the node passes besides labels, taints and max pods (AL2, Windows),
	// or the kubelet flags of the NodeConfig (AL2023), in order.
	KubeletArgs []string
	// KubeletConfig is the inline kubelet configuration (AL2023) or Bottlerocket's settings.kubernetes, as read.
	KubeletConfig map[string]any
	// Scripts are the shell scripts the node runs besides the bootstrap (MIME shell parts, AL2023 and AL2).
	Scripts []string
	// InstanceStoreRAID0 says the node joins its local NVMe disks into one RAID-0 array for its ephemeral
	// storage (AL2023 localStorage strategy RAID0, AL2 --local-disks raid0, a Bottlerocket bootstrap command
	// running apiclient ephemeral-storage init).
	InstanceStoreRAID0 bool
}

// Render writes the user data document of o.Family (plain text, not base64).
func Render(o Options) (string, error) {
	switch o.Family {
	case awsv1.AMIFamilyAL2023:
		return renderAL2023(o)
	case awsv1.AMIFamilyAL2:
		return renderAL2(o)
	case awsv1.AMIFamilyBottlerocket:
		return renderBottlerocket(o)
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return renderWindows(o), nil
	case awsv1.AMIFamilyCustom:
		return derefString(o.CustomUserData), nil
	}
	return "", fmt.Errorf("rendering user data, unknown AMI family %q", o.Family)
}

// Parse reads doc the way a node of the family would when it boots.
func Parse(family string, doc string) (Node, error) {
	switch family {
	case awsv1.AMIFamilyAL2023:
		return parseAL2023(doc)
	case awsv1.AMIFamilyAL2:
		return parseAL2(doc)
	case awsv1.AMIFamilyBottlerocket:
		return parseBottlerocket(doc)
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return parseWindows(doc)
	case awsv1.AMIFamilyCustom:
		return parseCustom(doc)
	}
	return Node{}, fmt.Errorf("parsing user data, unknown AMI family %q", family)
}

// labels is o.Labels without the labels the kubelet may not set on itself, plus karpenter.sh/do-not-sync-taints
// (the node registers with the claim's taints itself, so Lathe must not sync them: it would race the startup
// taints' removal).
func (o Options) labels() map[string]string {
	out := make(map[string]string, len(o.Labels)+1)
	for k, v := range o.Labels {
		if !restrictedLabel(k) {
			out[k] = v
		}
	}
	out[karpv1.NodeDoNotSyncTaintsKey] = "true"
	return out
}

func restrictedLabel(key string) bool {
	domain, _, found := strings.Cut(key, "/")
	if !found {
		return false
	}
	for _, restricted := range []string{corev1.LabelNamespaceNodeRestriction, "kubernetes.io", "k8s.io"} {
		if domain == restricted || strings.HasSuffix(domain, "."+restricted) {
			return true
		}
	}
	return false
}

// taints is o.Taints plus the unregistered taint, without duplicates, sorted.
func (o Options) taints() []corev1.Taint {
	taints := append([]corev1.Taint{}, o.Taints...)
	taints = append(taints, karpv1.UnregisteredNoExecuteTaint)
	sortTaints(taints)
	out := taints[:0]
	for i, t := range taints {
		if i > 0 && t.Key == taints[i-1].Key && t.Value == taints[i-1].Value && t.Effect == taints[i-1].Effect {
			continue
		}
		out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	return out
}

func sortTaints(taints []corev1.Taint) {
	sort.SliceStable(taints, func(i, j int) bool {
		a, b := taints[i], taints[j]
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		if a.Effect != b.Effect {
			return a.Effect < b.Effect
		}
		return a.Value < b.Value
	})
}

// maxPods is kubelet.maxPods, else the computed pods capacity.
func (o Options) maxPods() *int32 {
	if o.Kubelet != nil && o.Kubelet.MaxPods != nil {
		return o.Kubelet.MaxPods
	}
	return o.MaxPods
}

// clusterDNS is kubelet.clusterDNS, else o.ClusterDNS.
func (o Options) clusterDNS() []string {
	if o.Kubelet != nil && len(o.Kubelet.ClusterDNS) > 0 {
		return o.Kubelet.ClusterDNS
	}
	return o.ClusterDNS
}

func (o Options) raid0() bool {
	return o.InstanceStorePolicy != nil && *o.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
