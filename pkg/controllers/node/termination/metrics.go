package termination

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// collectors are the controller's metrics.
type collectors struct {
	nodesTerminated         *prometheus.CounterVec
	nodeTerminationDuration *prometheus.HistogramVec
	nodesDrained            *prometheus.CounterVec
	podsDrained             *prometheus.CounterVec
	evictionRequests        *prometheus.CounterVec
}

// newCollectors creates the metrics and registers them on reg.
func newCollectors(reg prometheus.Registerer) *collectors {
	return &collectors{
		nodesTerminated: metrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodes",
			Name:      "terminated_total",
			Help:      "Number of nodes terminated in total by Karpenter. Labeled by the owning nodepool.",
		}, []string{metrics.NodePoolLabel})),
		nodeTerminationDuration: metrics.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodes",
			Name:      "termination_duration_seconds",
			Help:      "The time taken between a node's deletion request and the removal of its finalizer.",
			Buckets:   []float64{1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800, 86400},
		}, []string{metrics.NodePoolLabel})),
		nodesDrained: metrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "nodes",
			Name:      "drained_total",
			Help:      "The total number of nodes drained by Karpenter.",
		}, []string{metrics.NodePoolLabel})),
		podsDrained: metrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "pods",
			Name:      "drained_total",
			Help:      "Number of pods drained from terminating nodes, by the disruption reason of the node (empty for a manual deletion).",
		}, []string{metrics.ReasonLabel})),
		evictionRequests: metrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "pods",
			Name:      "eviction_requests_total",
			Help:      "The total number of eviction requests made by Karpenter, by HTTP response code.",
		}, []string{"code"})),
	}
}
