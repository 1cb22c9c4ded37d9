package lifecycle

import (
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// Values of the reason label of karpenter_nodeclaims_disrupted_total set by this package.
const (
	DisruptedReasonLiveness             = "liveness"
	DisruptedReasonInsufficientCapacity = "insufficient_capacity"
	DisruptedReasonNodeClassNotReady    = "nodeclass_not_ready"
)

// lifecycleMetrics are the collectors the phases update.
type lifecycleMetrics struct {
	// launched counts successful CloudProvider.Create calls: karpenter_nodeclaims_launched_total{nodepool}.
	launched *prometheus.CounterVec
	// nodesCreated counts first registrations: karpenter_nodes_created_total{nodepool}.
	nodesCreated *prometheus.CounterVec
	// disrupted counts claims this package deletes:
	// karpenter_nodeclaims_disrupted_total{reason,nodepool,capacity_type}.
	disrupted *prometheus.CounterVec
}

// newMetrics creates the collectors and registers them on reg.
func newMetrics(reg prometheus.Registerer) *lifecycleMetrics {
	return &lifecycleMetrics{
		launched: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodeclaims",
			Name:      "launched_total",
			Help:      "NodeClaims whose instance the cloud provider launched, by NodePool.",
		}, metrics.NodePoolLabel),
		nodesCreated: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodes",
			Name:      "created_total",
			Help:      "Nodes Lathe brought up, by NodePool and zone.",
		}, metrics.NodePoolLabel, metrics.ZoneLabel),
		disrupted: metrics.NodeClaimsDisrupted(reg),
	}
}

// nodeCreated counts a node's first registration.
func (m *lifecycleMetrics) nodeCreated(nodeClaim *v1.NodeClaim) {
	m.nodesCreated.WithLabelValues(nodePoolOf(nodeClaim), nodeClaim.Labels[corev1.LabelTopologyZone]).Inc()
}

// nodePoolOf is the nodepool label value of a claim.
func nodePoolOf(nodeClaim *v1.NodeClaim) string { return nodeClaim.Labels[v1.NodePoolLabelKey] }

// countDisrupted increments karpenter_nodeclaims_disrupted_total for a claim this package deleted.
func (m *lifecycleMetrics) countDisrupted(nodeClaim *v1.NodeClaim, reason string) {
	m.disrupted.WithLabelValues(reason, nodePoolOf(nodeClaim), nodeClaim.Labels[v1.CapacityTypeLabelKey]).Inc()
}
