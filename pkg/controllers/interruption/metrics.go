package interruption

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// messageTypeLabel labels received messages with their kind.
const messageTypeLabel = "message_type"

// collectors are the controller's metrics, under the AWS provider's names.
type collectors struct {
	received      *prometheus.CounterVec
	deleted       prometheus.Counter
	queueDuration prometheus.Observer
	disrupted     *prometheus.CounterVec
}

func newCollectors(reg prometheus.Registerer) *collectors {
	return &collectors{
		received: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "interruption",
			Name:      "received_messages_total",
			Help:      "Count of messages received from the interruption queue. Broken down by message type.",
		}, messageTypeLabel),
		deleted: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "interruption",
			Name:      "deleted_messages_total",
			Help:      "Count of messages deleted from the interruption queue.",
		}).WithLabelValues(),
		queueDuration: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace,
			Subsystem: "interruption",
			Name:      "message_queue_duration_seconds",
			Help:      "Amount of time an interruption message is on the queue before it is processed by karpenter.",
			Buckets:   metrics.DurationBuckets(),
		}).WithLabelValues(),
		disrupted: metrics.NodeClaimsDisrupted(reg),
	}
}
