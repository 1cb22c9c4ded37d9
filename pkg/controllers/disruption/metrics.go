package disruption

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// Label names of the voluntary disruption metrics (upstream's).
const (
	decisionLabel          = "decision"
	consolidationTypeLabel = "consolidation_type"
	subsystem              = "voluntary_disruption"
	policyLabel            = "policy"
)

// collectors are the disruption metrics, under upstream Karpenter's names and labels, plus Lathe's
// karpenter_voluntary_disruption_consolidation_skipped_total{reason}, which counts the candidates
// consolidation considered and kept, by the kind of reason (so "why is nothing consolidated" has a
// dashboard answer without reading events).
type collectors struct {
	eligible    *prometheus.GaugeVec
	decisions   *prometheus.CounterVec
	evaluation  *prometheus.HistogramVec
	failures    *prometheus.CounterVec
	disrupted   *prometheus.CounterVec
	allowed     *prometheus.GaugeVec
	consuming   *prometheus.GaugeVec
	skipped     *prometheus.CounterVec
	validations *prometheus.CounterVec
	moves       *prometheus.CounterVec
	scores      *prometheus.HistogramVec
	byPool      *prometheus.CounterVec
	timeouts    *prometheus.CounterVec
}

func newCollectors(reg prometheus.Registerer) *collectors {
	c := &collectors{
		eligible: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "eligible_nodes",
			Help: "Nodes that are candidates for disruption, by disruption reason.",
		}, metrics.ReasonLabel),
		decisions: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "decisions_total",
			Help: "Disruption decisions taken, by decision, reason and consolidation type.",
		}, decisionLabel, metrics.ReasonLabel, consolidationTypeLabel),
		evaluation: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "decision_evaluation_duration_seconds",
			Help:    "Seconds spent weighing disruption decisions, by disruption reason and consolidation type.",
			Buckets: metrics.DurationBuckets(),
		}, metrics.ReasonLabel, consolidationTypeLabel),
		failures: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "queue_failures_total",
			Help: "Queued disruption commands that failed to complete, by consolidation type, decision and reason.",
		}, decisionLabel, metrics.ReasonLabel, consolidationTypeLabel),
		validations: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "failed_validations_total",
			Help: "Chosen disruption candidates dropped because they no longer passed validation, by consolidation type.",
		}, consolidationTypeLabel),
		disrupted: metrics.NodeClaimsDisrupted(reg),
		allowed: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "nodepools", Name: "allowed_disruptions",
			Help: "How many more of a NodePool's nodes its budgets let disrupt at the same time right now, by NodePool and reason; it moves quickly as nodes are created and deleted.",
		}, metrics.NodePoolLabel, metrics.ReasonLabel),
		consuming: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "nodepools", Name: "nodes_consuming_budgets",
			Help: "How many of a NodePool's nodes count against its disruption budgets right now, by NodePool and reason.",
		}, metrics.NodePoolLabel, metrics.ReasonLabel),
		byPool: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "decisions_by_nodepool_total",
			Help: "Disruption decisions taken, by NodePool, decision, reason and consolidation type.",
		}, metrics.NodePoolLabel, decisionLabel, metrics.ReasonLabel, consolidationTypeLabel),
		timeouts: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "consolidation_timeouts_total",
			Help: "Consolidation passes cut short because they ran out of time, by consolidation type.",
		}, consolidationTypeLabel),
		moves: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace, Name: "consolidation_moves_total",
			Help: "Moves balanced consolidation weighed, by the decision taken, NodePool and consolidation policy.",
		}, decisionLabel, metrics.NodePoolLabel, policyLabel),
		scores: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace, Name: "consolidation_score",
			Help:    "The score balanced consolidation gave each move it weighed, by the decision taken, NodePool and consolidation policy.",
			Buckets: []float64{0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0},
		}, decisionLabel, metrics.NodePoolLabel, policyLabel),
		skipped: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "consolidation_skipped_total",
			Help: "Number of times a consolidation candidate was considered and kept. Labeled by the kind of reason (pods_do_not_fit, not_cheaper, spot_to_spot, too_many_replacements, other).",
		}, metrics.ReasonLabel),
	}
	// Both series exist from the start, as upstream's (a timeout alert has something to read).
	for _, typ := range []string{"single", "multi"} {
		c.timeouts.WithLabelValues(typ)
	}
	return c
}

// reasonLabel is a disruption reason as a metric label value (snake case, as upstream).
func reasonLabel(r v1.DisruptionReason) string { return strings.ToLower(string(r)) }

// skipKind classifies an Unconsolidatable message for consolidation_skipped_total.
func skipKind(msg string) string {
	switch {
	case strings.HasPrefix(msg, "pods would not fit"):
		return "pods_do_not_fit"
	case strings.HasPrefix(msg, "Can't replace with a cheaper node"):
		return "not_cheaper"
	case strings.HasPrefix(msg, "SpotToSpot"):
		return "spot_to_spot"
	case strings.HasPrefix(msg, "Can't remove without creating"):
		return "too_many_replacements"
	}
	return "other"
}
