package node

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// Label names of the node metrics besides the well-known labels (upstream's).
const (
	nodeNameLabel = "node_name"
	phaseLabel    = "phase"
	managedLabel  = "managed"
	subsystem     = "nodes"
)

// wellKnown maps each well-known node label key (Karpenter's and the AWS provider's) to its metric label
// name, the part after the slash in snake case, as upstream names them.
func wellKnown() map[string]string {
	keys := awsv1.WellKnownLabels()
	for k := range v1.WellKnownLabels() {
		keys = append(keys, k)
	}
	out := map[string]string{}
	for _, k := range keys {
		if _, name, ok := strings.Cut(k, "/"); ok {
			out[k] = strings.ReplaceAll(strings.ToLower(name), "-", "_")
		}
	}
	return out
}

// collectors are the node gauges and the cluster utilization.
type collectors struct {
	labels         map[string]string // well-known label key → metric label name
	names          []string          // the metric label names of a node, sorted
	allocatable    *trackedGauge
	overhead       *trackedGauge
	podRequests    *trackedGauge
	podLimits      *trackedGauge
	daemonRequests *trackedGauge
	daemonLimits   *trackedGauge
	lifetime       *trackedGauge
	utilization    *trackedGauge
}

func newCollectors(reg prometheus.Registerer) *collectors {
	labels := wellKnown()
	names := []string{nodeNameLabel, phaseLabel, managedLabel}
	for _, name := range labels {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	withResource := append(slices.Clone(names), metrics.ResourceTypeLabel)
	gauge := func(name, help string, labels []string) *trackedGauge {
		return newTrackedGauge(metrics.NewGauge(reg, prometheus.GaugeOpts{Namespace: metrics.Namespace, Subsystem: subsystem, Name: name, Help: help}, labels...))
	}
	return &collectors{
		labels:         labels,
		names:          names,
		allocatable:    gauge("allocatable", "The resources a node can give pods (its status.allocatable), by resource type.", withResource),
		overhead:       gauge("system_overhead", "The resources a node keeps for the system: capacity minus allocatable, by resource type.", withResource),
		podRequests:    gauge("total_pod_requests", "Sum of the resource requests of every pod on a node (its DaemonSet pods too), by resource type.", withResource),
		podLimits:      gauge("total_pod_limits", "Sum of the resource limits of every pod on a node (its DaemonSet pods too), by resource type.", withResource),
		daemonRequests: gauge("total_daemon_requests", "Sum of the resource requests of a node's DaemonSet pods, by resource type.", withResource),
		daemonLimits:   gauge("total_daemon_limits", "Sum of the resource limits of a node's DaemonSet pods, by resource type.", withResource),
		lifetime:       gauge("current_lifetime_seconds", "Seconds since the node was created.", names),
		utilization: newTrackedGauge(metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "cluster", Name: "utilization_percent",
			Help: "The percentage of the nodes' allocatable resources that pods request, by resource type.",
		}, metrics.ResourceTypeLabel)),
	}
}

// sweep ends a pass: it deletes the series of nodes (and resources) the pass no longer found.
func (m *collectors) sweep() {
	for _, g := range []*trackedGauge{m.allocatable, m.overhead, m.podRequests, m.podLimits, m.daemonRequests, m.daemonLimits, m.lifetime, m.utilization} {
		g.sweep()
	}
}

// nodeLabels are the node's metric labels (without resource_type).
func (m *collectors) nodeLabels(node *corev1.Node) prometheus.Labels {
	out := prometheus.Labels{nodeNameLabel: node.Name, phaseLabel: string(node.Status.Phase),
		managedLabel: boolString(node.Labels[v1.NodePoolLabelKey] != "")}
	for key, name := range m.labels {
		if out[name] == "" {
			out[name] = node.Labels[key]
		}
	}
	return out
}

// setResources sets one gauge's series of a node, one per resource.
func setResources(g *trackedGauge, labels prometheus.Labels, resources corev1.ResourceList) {
	for name, q := range resources {
		series := prometheus.Labels{metrics.ResourceTypeLabel: resourceType(name)}
		for k, v := range labels {
			series[k] = v
		}
		g.setValue(series, value(name, q))
	}
}

// value is the quantity in cores for cpu (exact to the millicore) and in units otherwise.
func value(name corev1.ResourceName, q resource.Quantity) float64 {
	if name == corev1.ResourceCPU {
		return float64(q.MilliValue()) / 1000
	}
	return float64(q.Value())
}

// resourceType is a resource name as a label value: lower case, "-" as "_" (upstream's spelling).
func resourceType(name corev1.ResourceName) string {
	return strings.ReplaceAll(strings.ToLower(string(name)), "-", "_")
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
