package provisioning

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/lathe-autoscaler/lathe/pkg/metrics"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// Label values and names of the scheduler metrics this package emits, as upstream Karpenter's provisioner.
const (
	controllerName     = "provisioner"
	schedulingIDLabel  = "scheduling_id"
	provisionedReason  = "provisioned"
	schedulerSubsystem = "scheduler"
)

type provisionerMetrics struct {
	queueDepth         *prometheus.GaugeVec
	unfinishedWork     *prometheus.GaugeVec
	unschedulable      prometheus.Gauge
	schedulingSeconds  prometheus.Observer
	provisionerSeconds prometheus.Observer
	nodeClaimsCreated  *prometheus.CounterVec
}

func newProvisionerMetrics(reg prometheus.Registerer) *provisionerMetrics {
	queueDepth := metrics.NewGauge(reg, prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "queue_depth",
		Help: "The number of pods currently waiting to be scheduled.",
	}, metrics.ControllerLabel, schedulingIDLabel)
	unfinished := metrics.NewGauge(reg, prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "unfinished_work_seconds",
		Help: "How many seconds of work has been done that is in progress and hasn't been observed by scheduling_duration_seconds.",
	}, metrics.ControllerLabel, schedulingIDLabel)
	unschedulable := metrics.NewGauge(reg, prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "unschedulable_pods_count",
		Help: "The number of unschedulable Pods.",
	}, metrics.ControllerLabel)
	scheduling := metrics.NewHistogram(reg, prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "scheduling_duration_seconds",
		Help:    "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
		Buckets: metrics.DurationBuckets(),
	}, metrics.ControllerLabel)
	provisioner := metrics.NewHistogram(reg, prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: "provisioner", Name: "scheduling_duration_seconds",
		Help: "Duration of the provisioner's scheduling simulation (the name older Karpenter dashboards use).", Buckets: metrics.DurationBuckets(),
	})
	created := metrics.NewCounter(reg, prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "nodeclaims", Name: "created_total",
		Help: "Number of nodeclaims created in total by Karpenter. Labeled by reason the nodeclaim was created, the owning nodepool, and if min values was relaxed for this nodeclaim.",
	}, metrics.ReasonLabel, metrics.NodePoolLabel, metrics.MinValuesRelaxedLabel)
	return &provisionerMetrics{
		queueDepth:         queueDepth,
		unfinishedWork:     unfinished,
		unschedulable:      unschedulable.WithLabelValues(controllerName),
		schedulingSeconds:  scheduling.WithLabelValues(controllerName),
		provisionerSeconds: provisioner.WithLabelValues(),
		nodeClaimsCreated:  created,
	}
}

// startPass begins a scheduling pass over pending pods: the queue depth of this pass replaces the previous
// pass's series (each pass has its own scheduling_id, as upstream's scheduler has), and a pass with pods is
// reported as unfinished work until done is called with its duration. The solver places all pods in one
// call, so the unfinished work reads 0 seconds while it runs.
func (m *provisionerMetrics) startPass(pending int) (done func(time.Duration)) {
	id := string(uuid.NewUUID())
	m.queueDepth.DeletePartialMatch(prometheus.Labels{metrics.ControllerLabel: controllerName})
	m.queueDepth.WithLabelValues(controllerName, id).Set(float64(pending))
	if pending == 0 {
		return func(time.Duration) {}
	}
	m.unfinishedWork.WithLabelValues(controllerName, id).Set(0)
	return func(d time.Duration) {
		m.unfinishedWork.DeleteLabelValues(controllerName, id)
		m.schedulingSeconds.Observe(d.Seconds())
		m.provisionerSeconds.Observe(d.Seconds())
	}
}

func (m *provisionerMetrics) created(plan solver.NodeClaimPlan) {
	m.nodeClaimsCreated.WithLabelValues(provisionedReason, plan.NodePool, strconv.FormatBool(plan.MinValuesRelaxed)).Inc()
}
