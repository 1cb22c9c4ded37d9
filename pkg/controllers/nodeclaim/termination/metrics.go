package termination

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// collectors are the controller's metrics.
type collectors struct {
	terminated                  *prometheus.CounterVec
	terminationDuration         *prometheus.HistogramVec
	instanceTerminationDuration *prometheus.HistogramVec
}

// newCollectors creates the metrics and registers them on reg.
func newCollectors(reg prometheus.Registerer) *collectors {
	return &collectors{
		terminated: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodeclaims",
			Name:      "terminated_total",
			Help:      "NodeClaims Lathe finished terminating, by NodePool, capacity type and zone.",
		}, metrics.NodePoolLabel, metrics.CapacityTypeLabel, metrics.ZoneLabel),
		terminationDuration: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodeclaims",
			Name:      "termination_duration_seconds",
			Help:      "Seconds a NodeClaim took to terminate, by NodePool.",
			Buckets:   prometheus.ExponentialBuckets(1, 2, 12), // upstream's: 1 s to 2048 s
		}, metrics.NodePoolLabel),
		instanceTerminationDuration: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodeclaims",
			Name:      "instance_termination_duration_seconds",
			Help:      "Seconds the cloud provider took to terminate a NodeClaim's instance, by NodePool.",
			Buckets:   prometheus.ExponentialBuckets(1, 2, 11), // upstream's: 1 s to 1024 s
		}, metrics.NodePoolLabel),
	}
}

// observe records the termination of the NodeClaim, finished at now.
func (m *collectors) observe(nodeClaim *v1.NodeClaim, now time.Time) {
	nodePool := nodeClaim.Labels[v1.NodePoolLabelKey]
	m.terminated.WithLabelValues(nodePool, nodeClaim.Labels[v1.CapacityTypeLabelKey], nodeClaim.Labels[corev1.LabelTopologyZone]).Inc()
	m.terminationDuration.WithLabelValues(nodePool).Observe(now.Sub(nodeClaim.DeletionTimestamp.Time).Seconds())
	if cond := meta.FindStatusCondition(nodeClaim.Status.Conditions, v1.ConditionTypeInstanceTerminating); cond != nil {
		m.instanceTerminationDuration.WithLabelValues(nodePool).Observe(now.Sub(cond.LastTransitionTime.Time).Seconds())
	}
}
