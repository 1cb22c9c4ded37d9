package provisioning

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lathe-autoscaler/lathe/pkg/metrics"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// controllerName labels the scheduler metrics this package emits, as Karpenter labels its provisioner's.
const controllerName = "provisioner"

type provisionerMetrics struct {
	queueDepth         prometheus.Gauge
	unschedulable      prometheus.Gauge
	schedulingSeconds  prometheus.Observer
	provisionerSeconds prometheus.Observer
	nodeClaimsCreated  *prometheus.CounterVec
}

func newProvisionerMetrics(reg prometheus.Registerer) *provisionerMetrics {
	queueDepth := metrics.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: "scheduler", Name: "queue_depth",
		Help: "The number of pods the scheduler is currently trying to place.",
	}, []string{metrics.ControllerLabel}))
	unschedulable := metrics.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: "scheduler", Name: "unschedulable_pods_count",
		Help: "The number of pods the last scheduling pass could not place.",
	}, []string{metrics.ControllerLabel}))
	scheduling := metrics.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: "scheduler", Name: "scheduling_duration_seconds",
		Help: "Duration of one scheduling simulation.", Buckets: metrics.DurationBuckets(),
	}, []string{metrics.ControllerLabel}))
	provisioner := metrics.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: "provisioner", Name: "scheduling_duration_seconds",
		Help: "Duration of the provisioner's scheduling simulation (the name older Karpenter dashboards use).", Buckets: metrics.DurationBuckets(),
	}))
	created := metrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "nodeclaims", Name: "created_total",
		Help: "Number of NodeClaims created, by reason, nodepool, capacity type and whether minValues was relaxed.",
	}, []string{metrics.ReasonLabel, metrics.NodePoolLabel, metrics.CapacityTypeLabel, "min_values_relaxed"}))
	return &provisionerMetrics{
		queueDepth:         queueDepth.WithLabelValues(controllerName),
		unschedulable:      unschedulable.WithLabelValues(controllerName),
		schedulingSeconds:  scheduling.WithLabelValues(controllerName),
		provisionerSeconds: provisioner,
		nodeClaimsCreated:  created,
	}
}

func (m *provisionerMetrics) observeSolve(d time.Duration) {
	m.schedulingSeconds.Observe(d.Seconds())
	m.provisionerSeconds.Observe(d.Seconds())
}

func (m *provisionerMetrics) created(plan solver.NodeClaimPlan) {
	m.nodeClaimsCreated.WithLabelValues("provisioning", plan.NodePool, plan.CapacityType, strconv.FormatBool(plan.MinValuesRelaxed)).Inc()
}
