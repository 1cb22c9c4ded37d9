package userdata

import (
	"encoding/base64"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

// testCA is a base64 PEM bundle as EKS returns it.
var testCA = base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n"))

func ptr[T any](v T) *T { return &v }

// options is a NodeClaim's launch in cluster "demo" with labels (one restricted), a taint and a startup taint.
func options(family string) Options {
	return Options{
		Family:          family,
		ClusterName:     "demo",
		ClusterEndpoint: "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com",
		ClusterCABundle: testCA,
		ClusterCIDR:     "10.100.0.0/16",
		ClusterDNS:      []string{"10.100.0.10"},
		MaxPods:         ptr(int32(29)),
		Labels: map[string]string{
			"karpenter.sh/nodepool":            "default",
			"karpenter.sh/capacity-type":       "on-demand",
			"team":                             "web",
			"node.kubernetes.io/instance-type": "m5.large",
		},
		Taints: []corev1.Taint{
			{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule},
			{Key: "example.com/startup", Effect: corev1.TaintEffectNoExecute},
		},
	}
}

// kubelet sets every kubelet field the node class may.
func kubelet() *awsv1.KubeletConfiguration {
	return &awsv1.KubeletConfiguration{
		PodsPerCore:                 ptr(int32(4)),
		SystemReserved:              map[string]string{"cpu": "100m", "memory": "100Mi"},
		KubeReserved:                map[string]string{"cpu": "200m", "memory": "200Mi"},
		EvictionHard:                map[string]string{"memory.available": "5%"},
		EvictionSoft:                map[string]string{"memory.available": "10%"},
		EvictionSoftGracePeriod:     map[string]metav1.Duration{"memory.available": {Duration: time.Minute}},
		EvictionMaxPodGracePeriod:   ptr(int32(60)),
		ImageGCHighThresholdPercent: ptr(int32(85)),
		ImageGCLowThresholdPercent:  ptr(int32(80)),
		CPUCFSQuota:                 ptr(false),
	}
}
