package termination

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// collectors are the controller's metrics, under upstream Karpenter's names, types, labels and buckets.
type collectors struct {
	nodesTerminated         *prometheus.CounterVec
	nodeTerminationDuration *prometheus.SummaryVec
	nodeLifetime            *prometheus.HistogramVec
	nodesDrained            *prometheus.CounterVec
	podsDrained             *prometheus.CounterVec
	evictionRequests        *prometheus.CounterVec
}

// lifetimeBuckets are upstream's node lifetime buckets: 15 minutes to 30 days.
func lifetimeBuckets() []float64 {
	const day = 24 * time.Hour
	var out []float64
	for _, d := range []time.Duration{15 * time.Minute, 30 * time.Minute, 45 * time.Minute, time.Hour, 2 * time.Hour,
		4 * time.Hour, 6 * time.Hour, 8 * time.Hour, 10 * time.Hour, 12 * time.Hour, 16 * time.Hour, 20 * time.Hour,
		day, 2 * day, 3 * day, 5 * day, 10 * day, 15 * day, 20 * day, 25 * day, 30 * day} {
		out = append(out, d.Seconds())
	}
	return out
}

// newCollectors creates the metrics and registers them on reg.
func newCollectors(reg prometheus.Registerer) *collectors {
	return &collectors{
		nodesTerminated: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodes",
			Name:      "terminated_total",
			Help:      "Nodes Lathe terminated, by NodePool and zone.",
		}, metrics.NodePoolLabel, metrics.ZoneLabel),
		nodeTerminationDuration: metrics.NewSummary(reg, prometheus.SummaryOpts{
			Namespace:  metrics.Namespace,
			Subsystem:  "nodes",
			Name:       "termination_duration_seconds",
			Help:       "Seconds from a node's deletion request until its finalizer came off, by NodePool.",
			Objectives: metrics.SummaryObjectives(),
		}, metrics.NodePoolLabel),
		nodeLifetime: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodes",
			Name:      "lifetime_duration_seconds",
			Help:      "Seconds a node existed, from its creation until Lathe finished terminating it, by NodePool.",
			Buckets:   lifetimeBuckets(),
		}, metrics.NodePoolLabel),
		nodesDrained: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodes",
			Name:      "drained_total",
			Help:      "Nodes Lathe finished draining, by NodePool.",
		}, metrics.NodePoolLabel),
		podsDrained: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "pods",
			Name:      "drained_total",
			Help:      "Pods Lathe drained off nodes it was terminating, by reason.",
		}, metrics.ReasonLabel),
		evictionRequests: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "pods",
			Name:      "eviction_requests_total",
			Help:      "Eviction requests Lathe sent for pods, by the API server's response code.",
		}, "code"),
	}
}

// terminated records a node whose finalizer was removed at now.
func (m *collectors) terminated(node *corev1.Node, now time.Time) {
	nodePool := node.Labels[v1.NodePoolLabelKey]
	m.nodesTerminated.WithLabelValues(nodePool, node.Labels[corev1.LabelTopologyZone]).Inc()
	m.nodeTerminationDuration.WithLabelValues(nodePool).Observe(now.Sub(node.DeletionTimestamp.Time).Seconds())
	m.nodeLifetime.WithLabelValues(nodePool).Observe(now.Sub(node.CreationTimestamp.Time).Seconds())
}
