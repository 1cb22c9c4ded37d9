package counter

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

const subsystem = "nodepools"

// poolMetrics are the per-NodePool usage, limit and cost gauges.
type poolMetrics struct {
	usage *prometheus.GaugeVec
	limit *prometheus.GaugeVec
	cost  *prometheus.GaugeVec
	// costErrors counts the pricing passes that failed (a list or the instance types).
	costErrors *prometheus.CounterVec
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
		cost: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "cost_total",
			Help: "What the NodePool's launched NodeClaims cost per hour at their offerings' prices, in the cloud provider's currency; an estimate, not a bill.",
		}, metrics.NodePoolLabel),
		costErrors: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "cost_tracker_errors_total",
			Help: "Times pricing the NodePool's NodeClaims for karpenter_nodepools_cost_total failed.",
		}, metrics.NodePoolLabel),
	}
}

// set replaces the pool's series with the given usage and limits, dropping resource types it no longer has.
func (m *poolMetrics) set(pool string, usage, limits corev1.ResourceList) {
	m.forget(pool)
	for name, q := range usage {
		m.usage.WithLabelValues(pool, resourceType(name)).Set(value(name, q))
	}
	for name, q := range limits {
		m.limit.WithLabelValues(pool, resourceType(name)).Set(value(name, q))
	}
}

// resourceType is a resource name as upstream spells it in the resource_type label: lower case, "-" as "_"
// (ephemeral_storage).
func resourceType(name corev1.ResourceName) string {
	return strings.ReplaceAll(strings.ToLower(string(name)), "-", "_")
}

// value is the quantity in cores for cpu (exact to the millicore) and in units otherwise, as upstream's.
func value(name corev1.ResourceName, q resource.Quantity) float64 {
	if name == corev1.ResourceCPU {
		return float64(q.MilliValue()) / 1000
	}
	return float64(q.Value())
}

// forget drops every series of the pool.
func (m *poolMetrics) forget(pool string) {
	m.usage.DeletePartialMatch(prometheus.Labels{metrics.NodePoolLabel: pool})
	m.limit.DeletePartialMatch(prometheus.Labels{metrics.NodePoolLabel: pool})
	m.cost.DeletePartialMatch(prometheus.Labels{metrics.NodePoolLabel: pool})
}
