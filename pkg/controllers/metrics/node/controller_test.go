package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/metrics/node"
)

// TestNodeGauges computes the gauges of one managed node with a DaemonSet pod and a workload pod.
func TestNodeGauges(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clocktesting.NewFakeClock(created.Add(90 * time.Second))
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{v1.NodePoolLabelKey: "default", corev1.LabelTopologyZone: "z1", corev1.LabelInstanceTypeStable: "m5.large"}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1900m"), corev1.ResourceMemory: resource.MustParse("7Gi")},
		},
	}
	isController := true
	daemon := pod("d", "n1", "100m", "200m")
	daemon.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "u", Controller: &isController}}
	kube := fake.NewClientBuilder().WithObjects(n, daemon, pod("w", "n1", "850m", "")).Build()
	reg := prometheus.NewRegistry()
	ctrl := node.NewController(node.Deps{Client: kube, Clock: clk, Registerer: reg})
	if err := ctrl.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, resource string
		want           float64
	}{
		{"karpenter_nodes_allocatable", "cpu", 1.9},
		{"karpenter_nodes_system_overhead", "cpu", 0.1},
		{"karpenter_nodes_system_overhead", "memory", 1 << 30},
		{"karpenter_nodes_total_pod_requests", "cpu", 0.95},
		{"karpenter_nodes_total_daemon_requests", "cpu", 0.1},
		{"karpenter_nodes_total_pod_limits", "cpu", 0.2},
		{"karpenter_nodes_total_daemon_limits", "cpu", 0.2},
		{"karpenter_cluster_utilization_percent", "cpu", 50},
		{"karpenter_nodes_current_lifetime_seconds", "", 90},
	} {
		if got := value(t, reg, c.name, c.resource); got != c.want {
			t.Errorf("%s{resource_type=%q} = %v, want %v", c.name, c.resource, got, c.want)
		}
	}
}

func pod(name, nodeName, cpu, limit string) *corev1.Pod {
	c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}
	if limit != "" {
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limit)}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{c}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// value is the family's series with the resource type (any series when resource is ""), checking the node
// labels on node series.
func value(t *testing.T, reg *prometheus.Registry, name, resourceType string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if resourceType != "" && labels["resource_type"] != resourceType {
				continue
			}
			if name != "karpenter_cluster_utilization_percent" &&
				(labels["node_name"] != "n1" || labels["nodepool"] != "default" || labels["zone"] != "z1" || labels["instance_type"] != "m5.large" || labels["managed"] != "true") {
				t.Errorf("%s has labels %v", name, labels)
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Errorf("%s{resource_type=%q} is not exported", name, resourceType)
	return 0
}
