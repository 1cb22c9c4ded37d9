package counter

import (
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

const subsystem = "nodepools"

// poolMetrics are the per-NodePool usage and limit gauges.
type poolMetrics struct {
	usage *prometheus.GaugeVec
	limit *prometheus.GaugeVec
}

func newPoolMetrics(reg prometheus.Registerer) *poolMetrics {
	labels := []string{metrics.NodePoolLabel, metrics.ResourceTypeLabel}
	return &poolMetrics{
		usage: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "usage",
			Help: "The amount of resources the NodePool's nodes hold, by resource type (cores for cpu, bytes for memory, a count for nodes).",
		}, labels...),
		limit: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "limit",
			Help: "The NodePool's limits, by resource type; only resources in spec.limits are exported.",
		}, labels...),
	}
}

// set replaces the pool's series with the given usage and limits, dropping resource types it no longer has.
func (m *poolMetrics) set(pool string, usage, limits corev1.ResourceList) {
	m.forget(pool)
	for name, q := range usage {
		m.usage.WithLabelValues(pool, string(name)).Set(q.AsApproximateFloat64())
	}
	for name, q := range limits {
		m.limit.WithLabelValues(pool, string(name)).Set(q.AsApproximateFloat64())
	}
}

// forget drops every series of the pool.
func (m *poolMetrics) forget(pool string) {
	m.usage.DeletePartialMatch(prometheus.Labels{metrics.NodePoolLabel: pool})
	m.limit.DeletePartialMatch(prometheus.Labels{metrics.NodePoolLabel: pool})
}
