package provisioning

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
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
	ignored            prometheus.Gauge
	pendingByZone      *prometheus.GaugeVec
	schedulingSeconds  prometheus.Observer
	provisionerSeconds prometheus.Observer
	nodeClaimsCreated  *prometheus.CounterVec
}

func newProvisionerMetrics(reg prometheus.Registerer) *provisionerMetrics {
	queueDepth := metrics.NewGauge(reg, prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "queue_depth",
		Help: "Pending pods the current scheduling pass has to place, by controller and pass.",
	}, metrics.ControllerLabel, schedulingIDLabel)
	unfinished := metrics.NewGauge(reg, prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "unfinished_work_seconds",
		Help: "Seconds a running scheduling pass has taken so far, before scheduling_duration_seconds records it.",
	}, metrics.ControllerLabel, schedulingIDLabel)
	unschedulable := metrics.NewGauge(reg, prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "unschedulable_pods_count",
		Help: "Pending pods the last scheduling pass could not place, by controller.",
	}, metrics.ControllerLabel)
	ignored := metrics.NewGauge(reg, prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "ignored_pods_count",
		Help: "Pending pods the last provisioning pass left alone: they avoid Lathe's nodes, or their node selector or required node affinity cannot be provisioned for.",
	})
	pendingByZone := metrics.NewGauge(reg, prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "pending_pods_by_effective_zone_count",
		Help: "Pending pods of the last scheduling pass by the zone their zone constraints leave them (what their node selection, " +
			"volumes and zonal topology constraints all admit): a zone name, 'flexible' when several zones remain, 'none' when no zone does.",
	}, metrics.ControllerLabel, metrics.ZoneLabel)
	scheduling := metrics.NewHistogram(reg, prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "scheduling_duration_seconds",
		Help:    "Seconds each scheduling simulation took, for provisioning and for disruption, by controller.",
		Buckets: metrics.DurationBuckets(),
	}, metrics.ControllerLabel)
	provisioner := metrics.NewHistogram(reg, prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: "provisioner", Name: "scheduling_duration_seconds",
		Help: "Duration of the provisioner's scheduling simulation (the name older Karpenter dashboards use).", Buckets: metrics.DurationBuckets(),
	})
	created := metrics.NewCounter(reg, prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "nodeclaims", Name: "created_total",
		Help: "NodeClaims Lathe created, by why it created them, their NodePool and whether the NodePool's minValues had to be relaxed.",
	}, metrics.ReasonLabel, metrics.NodePoolLabel, metrics.MinValuesRelaxedLabel)
	return &provisionerMetrics{
		queueDepth:         queueDepth,
		unfinishedWork:     unfinished,
		unschedulable:      unschedulable.WithLabelValues(controllerName),
		ignored:            ignored.WithLabelValues(),
		pendingByZone:      pendingByZone,
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

// pendingZones replaces the previous pass's pending pods by effective zone with this pass's: zones[i] is
// the effective zone of pods[i] (solver.EffectiveZones), and only pods in phase Pending count, as upstream.
func (m *provisionerMetrics) pendingZones(pods []*corev1.Pod, zones []string) {
	m.pendingByZone.DeletePartialMatch(prometheus.Labels{metrics.ControllerLabel: controllerName})
	counts := map[string]int{}
	for i, pod := range pods {
		if pod.Status.Phase == corev1.PodPending {
			counts[zones[i]]++
		}
	}
	for zone, n := range counts {
		m.pendingByZone.WithLabelValues(controllerName, zone).Set(float64(n))
	}
}

func (m *provisionerMetrics) created(plan solver.NodeClaimPlan) {
	m.nodeClaimsCreated.WithLabelValues(provisionedReason, plan.NodePool, strconv.FormatBool(plan.MinValuesRelaxed)).Inc()
}
