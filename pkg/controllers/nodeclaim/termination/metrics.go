package termination

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// terminationBuckets span a second to a day: drains wait for PDBs and grace periods.
func terminationBuckets() []float64 {
	return []float64{1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800, 86400}
}

// collectors are the controller's metrics.
type collectors struct {
	terminated                  *prometheus.CounterVec
	terminationDuration         *prometheus.HistogramVec
	instanceTerminationDuration *prometheus.HistogramVec
}

// newCollectors creates the metrics and registers them on reg.
func newCollectors(reg prometheus.Registerer) *collectors {
	return &collectors{
		terminated: metrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodeclaims",
			Name:      "terminated_total",
			Help:      "Number of nodeclaims terminated in total by Karpenter. Labeled by the owning nodepool and capacity type.",
		}, []string{metrics.NodePoolLabel, metrics.CapacityTypeLabel})),
		terminationDuration: metrics.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodeclaims",
			Name:      "termination_duration_seconds",
			Help:      "Duration of NodeClaim termination in seconds, from its deletion request to the removal of its finalizer.",
			Buckets:   terminationBuckets(),
		}, []string{metrics.NodePoolLabel})),
		instanceTerminationDuration: metrics.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodeclaims",
			Name:      "instance_termination_duration_seconds",
			Help:      "Duration of CloudProvider Instance termination in seconds.",
			Buckets:   terminationBuckets(),
		}, []string{metrics.NodePoolLabel})),
	}
}

// observe records the termination of the NodeClaim, finished at now.
func (m *collectors) observe(nodeClaim *v1.NodeClaim, now time.Time) {
	nodePool := nodeClaim.Labels[v1.NodePoolLabelKey]
	m.terminated.WithLabelValues(nodePool, nodeClaim.Labels[v1.CapacityTypeLabelKey]).Inc()
	m.terminationDuration.WithLabelValues(nodePool).Observe(now.Sub(nodeClaim.DeletionTimestamp.Time).Seconds())
	if cond := meta.FindStatusCondition(nodeClaim.Status.Conditions, v1.ConditionTypeInstanceTerminating); cond != nil {
		m.instanceTerminationDuration.WithLabelValues(nodePool).Observe(now.Sub(cond.LastTransitionTime.Time).Seconds())
	}
}
