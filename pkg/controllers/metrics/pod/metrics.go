package pod

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// Label names of the pod metrics (upstream's).
const (
	nameLabel         = "name"
	namespaceLabel    = "namespace"
	ownerLabel        = "owner"
	nodeLabel         = "node"
	scheduledLabel    = "scheduled"
	archLabel         = "arch"
	phaseLabel        = "phase"
	readyLabel        = "ready"
	managedLabel      = "managed"
	podSubsystem      = "pods"
	startupHelp       = "Seconds from a pod's creation until it was running and ready."
	boundHelp         = "Seconds from a pod's creation until it was bound to a node."
	stateHelp         = "Always 1, one series per pod; the labels carry its name, namespace, owner, node, NodePool, zone, architecture, capacity type, instance type, phase and readiness."
	unstartedTimeHelp = "For a pod not running yet: seconds since it was created."
	unboundTimeHelp   = "For a pod not bound yet: seconds since it was created."
)

// collectors are the pod metrics.
type collectors struct {
	startup   prometheus.Observer
	bound     prometheus.Observer
	state     *prometheus.GaugeVec
	unstarted *prometheus.GaugeVec
	unbound   *prometheus.GaugeVec
	// The provisioning_* family counts from when the provisioner first found the pod a place (and the
	// undecided time from when it took the pod up), times kept in memory, not the pod's creation.
	provisioningStartup   prometheus.Observer
	provisioningBound     prometheus.Observer
	provisioningUnstarted *prometheus.GaugeVec
	provisioningUnbound   *prometheus.GaugeVec
	undecided             *prometheus.GaugeVec
	// stateOf is, by pod, the label values of its karpenter_pods_state series: replacing or dropping the series
	// deletes that one series, where DeletePartialMatch would look at every pod's (a 1,000-pod apply made that
	// scan a tenth of Lathe's CPU).
	stateOf struct {
		sync.Mutex
		values map[types.NamespacedName][]string
	}
}

func newCollectors(reg prometheus.Registerer) *collectors {
	c := &collectors{
		startup: metrics.NewSummary(reg, prometheus.SummaryOpts{
			Namespace: metrics.Namespace, Subsystem: podSubsystem, Name: "startup_duration_seconds",
			Help: startupHelp, Objectives: metrics.SummaryObjectives(),
		}).WithLabelValues(),
		bound: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace, Subsystem: podSubsystem, Name: "bound_duration_seconds",
			Help: boundHelp, Buckets: metrics.DurationBuckets(),
		}).WithLabelValues(),
		state: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: podSubsystem, Name: "state", Help: stateHelp,
		}, nameLabel, namespaceLabel, ownerLabel, nodeLabel, scheduledLabel, metrics.NodePoolLabel, metrics.ZoneLabel,
			archLabel, metrics.CapacityTypeLabel, metrics.InstanceTypeLabel, phaseLabel, readyLabel, managedLabel),
		unstarted: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: podSubsystem, Name: "unstarted_time_seconds", Help: unstartedTimeHelp,
		}, nameLabel, namespaceLabel),
		unbound: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: podSubsystem, Name: "unbound_time_seconds", Help: unboundTimeHelp,
		}, nameLabel, namespaceLabel),
		provisioningStartup: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace, Subsystem: podSubsystem, Name: "provisioning_startup_duration_seconds",
			Help:    "Seconds from the provisioner first finding a pod a place until the pod ran and was ready (measured from a time kept in memory, not the pod's creation).",
			Buckets: metrics.DurationBuckets(),
		}).WithLabelValues(),
		provisioningBound: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace, Subsystem: podSubsystem, Name: "provisioning_bound_duration_seconds",
			Help:    "Seconds from the provisioner first finding a pod a place until the pod was bound to a node (measured from a time kept in memory, not the pod's creation).",
			Buckets: metrics.DurationBuckets(),
		}).WithLabelValues(),
		provisioningUnstarted: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: podSubsystem, Name: "provisioning_unstarted_time_seconds",
			Help: "For a pod not running yet: seconds since the provisioner first found it a place (a time kept in memory).",
		}, nameLabel, namespaceLabel),
		provisioningUnbound: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: podSubsystem, Name: "provisioning_unbound_time_seconds",
			Help: "For a pod not bound yet: seconds since the provisioner first found it a place (a time kept in memory).",
		}, nameLabel, namespaceLabel),
		undecided: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: podSubsystem, Name: "provisioning_scheduling_undecided_time_seconds",
			Help: "For a pending pod the provisioner took up but has not yet decided on: seconds since it took the pod up (a time kept in memory).",
		}, nameLabel, namespaceLabel),
	}
	c.stateOf.values = map[types.NamespacedName][]string{}
	return c
}

// forget drops every series of the pod.
func (m *collectors) forget(name types.NamespacedName) {
	labels := prometheus.Labels{nameLabel: name.Name, namespaceLabel: name.Namespace}
	m.stateOf.Lock()
	if old, ok := m.stateOf.values[name]; ok {
		m.state.DeleteLabelValues(old...)
		delete(m.stateOf.values, name)
	}
	m.stateOf.Unlock()
	m.unstarted.Delete(labels)
	m.unbound.Delete(labels)
	m.provisioningUnstarted.Delete(labels)
	m.provisioningUnbound.Delete(labels)
	m.undecided.Delete(labels)
}

// setState replaces the pod's karpenter_pods_state series; node is the pod's node (empty when unbound or
// not found).
func (m *collectors) setState(pod *corev1.Pod, node *corev1.Node) {
	_, ready := conditionTrue(pod, corev1.PodReady)
	values := []string{pod.Name, pod.Namespace, owner(pod), pod.Spec.NodeName, strconv.FormatBool(pod.Spec.NodeName != ""),
		node.Labels[v1.NodePoolLabelKey], node.Labels[corev1.LabelTopologyZone], node.Labels[corev1.LabelArchStable],
		node.Labels[v1.CapacityTypeLabelKey], node.Labels[corev1.LabelInstanceTypeStable], string(pod.Status.Phase),
		strconv.FormatBool(ready), strconv.FormatBool(node.Labels[v1.NodePoolLabelKey] != "")}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	m.stateOf.Lock()
	defer m.stateOf.Unlock()
	if old, ok := m.stateOf.values[key]; ok && !slices.Equal(old, values) {
		m.state.DeleteLabelValues(old...)
	}
	m.stateOf.values[key] = values
	m.state.WithLabelValues(values...).Set(1)
}

// setWaiting sets the unbound and unstarted times of a pending pod, or drops them once it is bound or
// started.
func (m *collectors) setWaiting(pod *corev1.Pod, now time.Time) {
	labels := prometheus.Labels{nameLabel: pod.Name, namespaceLabel: pod.Namespace}
	age := now.Sub(pod.CreationTimestamp.Time).Seconds()
	if _, scheduled := conditionTrue(pod, corev1.PodScheduled); pod.Status.Phase == corev1.PodPending && !scheduled {
		m.unbound.With(labels).Set(age)
	} else {
		m.unbound.Delete(labels)
	}
	if pod.Status.Phase == corev1.PodPending {
		m.unstarted.With(labels).Set(age)
	} else {
		m.unstarted.Delete(labels)
	}
}

// setProvisioningWaiting sets or drops the pod's provisioning_* gauges as setWaiting does the others,
// from the times the provisioner recorded (zero for what it has not done).
func (m *collectors) setProvisioningWaiting(pod *corev1.Pod, now, acked, decided, schedulable time.Time) {
	labels := prometheus.Labels{nameLabel: pod.Name, namespaceLabel: pod.Namespace}
	pending := pod.Status.Phase == corev1.PodPending
	_, scheduled := conditionTrue(pod, corev1.PodScheduled)
	setOrDrop(m.undecided, labels, now, acked, decided.IsZero() && !scheduled)
	setOrDrop(m.provisioningUnbound, labels, now, schedulable, pending && !scheduled)
	setOrDrop(m.provisioningUnstarted, labels, now, schedulable, pending)
}

// setOrDrop sets the series to the seconds since a known since when it applies, and deletes it otherwise.
func setOrDrop(g *prometheus.GaugeVec, labels prometheus.Labels, now, since time.Time, applies bool) {
	if applies && !since.IsZero() {
		g.With(labels).Set(now.Sub(since).Seconds())
	} else {
		g.Delete(labels)
	}
}

// owner is the path of the pod's first owner, as upstream's owner label spells it.
func owner(pod *corev1.Pod) string {
	if len(pod.OwnerReferences) == 0 {
		return ""
	}
	ref := pod.OwnerReferences[0]
	return fmt.Sprintf("/apis/%s/namespaces/%s/%ss/%s", ref.APIVersion, pod.Namespace, strings.ToLower(ref.Kind), ref.Name)
}

// conditionTrue returns when the pod's condition of type t became true, if it is true.
func conditionTrue(pod *corev1.Pod, t corev1.PodConditionType) (time.Time, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}
