package status

import (
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// karpenterBuckets are the transition and termination buckets Karpenter gives its own kinds: 0.5 s to
// 8192 s, doubling.
func karpenterBuckets() []float64 { return prometheus.ExponentialBuckets(0.5, 2, 15) }

// NodeClaims measures NodeClaims, labeled by node class and NodePool, as Karpenter configures it.
func NodeClaims(deps Deps) *Controller[*v1.NodeClaim] {
	return NewController(deps, Kind[*v1.NodeClaim]{
		Name: "nodeclaim", Group: v1.Group, Kind: "NodeClaim",
		Labels:     []string{awsv1.LabelNodeClass, v1.NodePoolLabelKey},
		Buckets:    karpenterBuckets(),
		New:        func() *v1.NodeClaim { return &v1.NodeClaim{} },
		Conditions: func(o *v1.NodeClaim) []metav1.Condition { return o.Status.Conditions },
	})
}

// NodePools measures NodePools.
func NodePools(deps Deps) *Controller[*v1.NodePool] {
	return NewController(deps, Kind[*v1.NodePool]{
		Name: "nodepool", Group: v1.Group, Kind: "NodePool",
		Buckets:    karpenterBuckets(),
		New:        func() *v1.NodePool { return &v1.NodePool{} },
		Conditions: func(o *v1.NodePool) []metav1.Condition { return o.Status.Conditions },
	})
}

// Nodes measures Nodes (no deprecated metrics), labeled by node class, NodePool and initialization.
func Nodes(deps Deps) *Controller[*corev1.Node] {
	return NewController(deps, Kind[*corev1.Node]{
		Name:    "node",
		Labels:  []string{awsv1.LabelNodeClass, v1.NodePoolLabelKey, v1.NodeInitializedLabelKey},
		Buckets: karpenterBuckets(),
		New:     func() *corev1.Node { return &corev1.Node{} },
		Conditions: func(o *corev1.Node) []metav1.Condition {
			out := make([]metav1.Condition, 0, len(o.Status.Conditions))
			for _, c := range o.Status.Conditions {
				out = append(out, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status),
					Reason: c.Reason, LastTransitionTime: c.LastTransitionTime})
			}
			return out
		},
	})
}

// EC2NodeClasses measures EC2NodeClasses, with Prometheus' default buckets as the AWS provider leaves them.
func EC2NodeClasses(deps Deps) *Controller[*awsv1.EC2NodeClass] {
	return NewController(deps, Kind[*awsv1.EC2NodeClass]{
		Name: "ec2nodeclass", Group: awsv1.Group, Kind: "EC2NodeClass",
		Buckets:    prometheus.DefBuckets,
		New:        func() *awsv1.EC2NodeClass { return &awsv1.EC2NodeClass{} },
		Conditions: func(o *awsv1.EC2NodeClass) []metav1.Condition { return o.Status.Conditions },
	})
}
