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
			Help:      "Messages Lathe read from the interruption queue, by kind of message.",
		}, messageTypeLabel),
		deleted: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Subsystem: "interruption",
			Name:      "deleted_messages_total",
			Help:      "Messages Lathe removed from the interruption queue once handled.",
		}).WithLabelValues(),
		queueDuration: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace,
			Subsystem: "interruption",
			Name:      "message_queue_duration_seconds",
			Help:      "Seconds an interruption message waited in the queue before Lathe handled it.",
			Buckets:   metrics.DurationBuckets(),
		}).WithLabelValues(),
		disrupted: metrics.NodeClaimsDisrupted(reg),
	}
}
