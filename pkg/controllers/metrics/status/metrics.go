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
			Help: "1 for each object and the status and reason its condition of each type has now; alert on, for example, Ready=False above 0.",
		}, perObject...),
		currentStatus: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: operator, Subsystem: conditions, Name: "current_status_seconds",
			Help: "Seconds an object's condition has kept its current status; alert on, for example, the 99th percentile of Ready=Unknown above 5 minutes.",
		}, perObject...),
		transitions: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: operator, Subsystem: conditions, Name: "transitions_total",
			Help: "Changes of status of conditions, by condition type, the new status and reason.",
		}, append([]string{typeLabel, statusLabel, metrics.ReasonLabel}, extra...)...),
		transitionSeconds: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: operator, Subsystem: conditions, Name: "transition_seconds",
			Help:    "Seconds a condition kept a status before it changed, by condition type and that status.",
			Buckets: buckets,
		}, append([]string{typeLabel, statusLabel}, extra...)...),
		terminating: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: operator, Subsystem: termination, Name: "current_time_seconds",
			Help: "For an object being deleted: seconds since its deletion began.",
		}, append([]string{namespaceLabel, nameLabel}, extra...)...),
		termination: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: operator, Subsystem: termination, Name: "duration_seconds",
			Help:    "Seconds an object took from its deletion request until it was gone.",
			Buckets: buckets,
		}, extra...),
	}
}

// prometheusLabel turns an object label key into a metric label name, as operatorpkg does
// ("karpenter.sh/nodepool" → "karpenter_sh_nodepool").
func prometheusLabel(key string) string {
	return strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(key)
}
