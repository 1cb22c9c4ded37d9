package status

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// Label names and the namespace of the status condition metrics (awslabs/operatorpkg's).
const (
	namespaceLabel = "namespace"
	nameLabel      = "name"
	typeLabel      = "type"
	statusLabel    = "status"
	groupLabel     = "group"
	kindLabel      = "kind"
	operator       = "operator"
)

// collectors are one set of status condition and termination metrics: operator_<kind>_status_condition_*
// and operator_<kind>_termination_* with the kind's extra labels, or (kind "") the deprecated
// operator_status_condition_* and operator_termination_* with group and kind.
type collectors struct {
	extra             []string
	count             *prometheus.GaugeVec
	currentStatus     *prometheus.GaugeVec
	transitions       *prometheus.CounterVec
	transitionSeconds *prometheus.HistogramVec
	terminating       *prometheus.GaugeVec
	termination       *prometheus.HistogramVec
}

func newCollectors(reg prometheus.Registerer, kind string, buckets []float64, extra []string) *collectors {
	prefix := ""
	if kind != "" {
		prefix = kind + "_"
	}
	conditions, termination := prefix+"status_condition", prefix+"termination"
	perObject := append([]string{namespaceLabel, nameLabel, typeLabel, statusLabel, metrics.ReasonLabel}, extra...)
	return &collectors{
		extra: extra,
		count: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: operator, Subsystem: conditions, Name: "count",
			Help: "The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0",
		}, perObject...),
		currentStatus: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: operator, Subsystem: conditions, Name: "current_status_seconds",
			Help: "The current amount of time in seconds that a status condition has been in a specific state. Alarm := P99(Updated=Unknown) > 5 minutes",
		}, perObject...),
		transitions: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: operator, Subsystem: conditions, Name: "transitions_total",
			Help: "The count of transitions of a given object, type and status.",
		}, append([]string{typeLabel, statusLabel, metrics.ReasonLabel}, extra...)...),
		transitionSeconds: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: operator, Subsystem: conditions, Name: "transition_seconds",
			Help:    "The amount of time a condition was in a given state before transitioning. e.g. Alarm := P99(Updated=False) > 5 minutes",
			Buckets: buckets,
		}, append([]string{typeLabel, statusLabel}, extra...)...),
		terminating: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: operator, Subsystem: termination, Name: "current_time_seconds",
			Help: "The current amount of time in seconds that an object has been in terminating state.",
		}, append([]string{namespaceLabel, nameLabel}, extra...)...),
		termination: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: operator, Subsystem: termination, Name: "duration_seconds",
			Help:    "The amount of time taken by an object to terminate completely.",
			Buckets: buckets,
		}, extra...),
	}
}

// prometheusLabel turns an object label key into a metric label name, as operatorpkg does
// ("karpenter.sh/nodepool" → "karpenter_sh_nodepool").
func prometheusLabel(key string) string {
	return strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(key)
}
