package health

import (
	"strings"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// Label names of karpenter_nodeclaims_unhealthy_disrupted_total.
const (
	conditionLabel = "condition"
	imageIDLabel   = "image_id"
)

// collectors are the controller's metrics.
type collectors struct {
	disrupted          *prometheus.CounterVec
	unhealthyDisrupted *prometheus.CounterVec
}

func newCollectors(reg prometheus.Registerer) *collectors {
	return &collectors{
		disrupted: metrics.NodeClaimsDisrupted(reg),
		unhealthyDisrupted: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodeclaims",
			Name:      "unhealthy_disrupted_total",
			Help:      "NodeClaims node repair replaced because a node condition stayed unhealthy too long, by that condition, NodePool, capacity type and image ID.",
		}, conditionLabel, metrics.NodePoolLabel, metrics.CapacityTypeLabel, imageIDLabel),
	}
}

// observe counts a repaired node.
func (m *collectors) observe(node *corev1.Node, nodeClaim *v1.NodeClaim, unhealthy corev1.NodeCondition) {
	nodePool, capacityType := node.Labels[v1.NodePoolLabelKey], node.Labels[v1.CapacityTypeLabelKey]
	m.disrupted.WithLabelValues(metrics.ReasonUnhealthy, nodePool, capacityType).Inc()
	m.unhealthyDisrupted.WithLabelValues(snakeCase(string(unhealthy.Type)), nodePool, capacityType, nodeClaim.Status.ImageID).Inc()
}

// snakeCase turns a condition type such as "AcceleratedHardwareReady" into "accelerated_hardware_ready".
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
