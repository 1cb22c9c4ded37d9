// Package node exports the node gauges (karpenter_nodes_allocatable, _system_overhead, _total_pod_requests,
// _total_pod_limits, _total_daemon_requests, _total_daemon_limits, _current_lifetime_seconds) and
// karpenter_cluster_utilization_percent, recomputed from the cached Nodes and Pods every few seconds.
package node

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/lathe-autoscaler/lathe/pkg/metrics"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// period is how often the gauges are recomputed (upstream's).
const period = 5 * time.Second

// Deps are the controller's dependencies.
type Deps struct {
	Client     client.Reader
	Clock      clock.Clock
	Registerer prometheus.Registerer
}

// Controller recomputes the node gauges every period.
type Controller struct {
	client  client.Reader
	clock   clock.Clock
	metrics *collectors
}

// NewController returns the node metrics controller.
func NewController(deps Deps) *Controller {
	return &Controller{client: deps.Client, clock: deps.Clock, metrics: newCollectors(deps.Registerer)}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "metrics.node" }

// Register adds the loop to the manager.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error { return mgr.Add(c) }

// NeedLeaderElection runs the loop on the leader only, as upstream's singleton.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start recomputes the gauges every period until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	for {
		if err := c.Reconcile(ctx); err != nil {
			log.FromContext(ctx).Error(err, "updating node metrics failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(period):
		}
	}
}

// Reconcile sets the gauges to the current nodes' values, updating series in place, and then deletes the
// series of nodes that are gone.
func (c *Controller) Reconcile(ctx context.Context) error {
	var nodes corev1.NodeList
	if err := c.client.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing nodes, %w", err)
	}
	var pods corev1.PodList
	if err := c.client.List(ctx, &pods); err != nil {
		return fmt.Errorf("listing pods, %w", err)
	}
	byNode := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.Spec.NodeName != "" && !scheduling.IsTerminal(p) {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	m := c.metrics
	allocatable, requested := corev1.ResourceList{}, corev1.ResourceList{}
	now := c.clock.Now()
	for i := range nodes.Items {
		node := &nodes.Items[i]
		labels := m.nodeLabels(node)
		podRequests, podLimit, daemonRequests, daemonLimits := corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}
		for _, p := range byNode[node.Name] {
			r, l := scheduling.PodRequests(p), podLimits(p)
			scheduling.AddResources(podRequests, r)
			scheduling.AddResources(podLimit, l)
			if scheduling.IsDaemonSetPod(p) {
				scheduling.AddResources(daemonRequests, r)
				scheduling.AddResources(daemonLimits, l)
			}
		}
		setResources(m.allocatable, labels, node.Status.Allocatable)
		setResources(m.overhead, labels, overhead(node))
		setResources(m.podRequests, labels, podRequests)
		setResources(m.podLimits, labels, podLimit)
		setResources(m.daemonRequests, labels, daemonRequests)
		setResources(m.daemonLimits, labels, daemonLimits)
		m.lifetime.setValue(labels, now.Sub(node.CreationTimestamp.Time).Seconds())
		scheduling.AddResources(allocatable, node.Status.Allocatable)
		scheduling.AddResources(requested, podRequests)
	}
	for name, total := range allocatable {
		if total.IsZero() {
			continue
		}
		m.utilization.setValue(prometheus.Labels{metrics.ResourceTypeLabel: resourceType(name)}, 100*value(name, requested[name])/value(name, total))
	}
	m.sweep()
	return nil
}

// overhead is what the node keeps from pods: capacity minus allocatable.
func overhead(node *corev1.Node) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, capacity := range node.Status.Capacity {
		q := capacity.DeepCopy()
		if a, ok := node.Status.Allocatable[name]; ok {
			q.Sub(a)
		}
		out[name] = q
	}
	return out
}

// podLimits are the pod's effective limits: per resource the larger of its containers' sum and any init
// container's, plus the pod overhead.
func podLimits(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		scheduling.AddResources(out, c.Resources.Limits)
	}
	for _, c := range pod.Spec.InitContainers {
		for name, q := range c.Resources.Limits {
			if have, ok := out[name]; !ok || q.Cmp(have) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	scheduling.AddResources(out, pod.Spec.Overhead)
	return out
}
