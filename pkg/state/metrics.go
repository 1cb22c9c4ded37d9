package state

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

const subsystem = "cluster_state"

// clusterMetrics are the cluster-state gauges, updated each time Synced is asked.
type clusterMetrics struct {
	synced       prometheus.Gauge
	nodeCount    prometheus.Gauge
	unsyncedTime prometheus.Gauge
	// decision observes how long pods waited from the provisioner taking them up to its first decision.
	decision prometheus.Observer
}

func newClusterMetrics(reg prometheus.Registerer) *clusterMetrics {
	return &clusterMetrics{
		synced: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "synced",
			Help: "Whether the cluster state is synced with the API server: 1 if synced, 0 if not.",
		}).WithLabelValues(),
		nodeCount: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "node_count",
			Help: "How many Nodes Lathe's in-memory cluster state holds.",
		}).WithLabelValues(),
		unsyncedTime: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "unsynced_time_seconds",
			Help: "Seconds the cluster state has been unsynced; 0 when synced.",
		}).WithLabelValues(),
		decision: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace, Subsystem: "pods", Name: "scheduling_decision_duration_seconds",
			Help:    "Seconds from the provisioner first taking up a pending pod to its first scheduling decision on it (a place found or none).",
			Buckets: metrics.DurationBuckets(),
		}).WithLabelValues(),
	}
}
