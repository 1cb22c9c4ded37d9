package controllers_test

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// upstreamDuration is upstream Karpenter v1.14's metrics.DurationBuckets().
var upstreamDuration = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
	0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 120, 150,
	300, 450, 600}

// TestMetricsMatchUpstream checks families against their definitions in kubernetes-sigs/karpenter and
// aws/karpenter-provider-aws v1.14.1 (type, label names, buckets), as read there, not from Lathe.
func TestMetricsMatchUpstream(t *testing.T) {
	day := 86400.0
	want := []metrics.Family{
		{Name: "karpenter_nodeclaims_created_total", Type: "counter", Labels: []string{"reason", "nodepool", "min_values_relaxed"}},
		{Name: "karpenter_nodeclaims_terminated_total", Type: "counter", Labels: []string{"nodepool", "capacity_type", "zone"}},
		{Name: "karpenter_nodeclaims_disrupted_total", Type: "counter", Labels: []string{"reason", "nodepool", "capacity_type"}},
		{Name: "karpenter_nodeclaims_termination_duration_seconds", Type: "histogram", Labels: []string{"nodepool"},
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048}},
		{Name: "karpenter_nodeclaims_instance_termination_duration_seconds", Type: "histogram", Labels: []string{"nodepool"},
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}},
		{Name: "karpenter_nodes_created_total", Type: "counter", Labels: []string{"nodepool", "zone"}},
		{Name: "karpenter_nodes_terminated_total", Type: "counter", Labels: []string{"nodepool", "zone"}},
		{Name: "karpenter_nodes_termination_duration_seconds", Type: "summary", Labels: []string{"nodepool"}},
		{Name: "karpenter_nodes_lifetime_duration_seconds", Type: "histogram", Labels: []string{"nodepool"},
			Buckets: []float64{900, 1800, 2700, 3600, 7200, 14400, 21600, 28800, 36000, 43200, 57600, 72000,
				day, 2 * day, 3 * day, 5 * day, 10 * day, 15 * day, 20 * day, 25 * day, 30 * day}},
		{Name: "karpenter_nodes_drained_total", Type: "counter", Labels: []string{"nodepool"}},
		{Name: "karpenter_pods_startup_duration_seconds", Type: "summary"},
		{Name: "karpenter_pods_state", Type: "gauge", Labels: []string{"name", "namespace", "owner", "node", "scheduled", "nodepool",
			"zone", "arch", "capacity_type", "instance_type", "phase", "ready", "managed"}},
		{Name: "karpenter_pods_bound_duration_seconds", Type: "histogram", Buckets: upstreamDuration},
		{Name: "karpenter_pods_unbound_time_seconds", Type: "gauge", Labels: []string{"name", "namespace"}},
		{Name: "karpenter_pods_unstarted_time_seconds", Type: "gauge", Labels: []string{"name", "namespace"}},
		{Name: "karpenter_pods_drained_total", Type: "counter", Labels: []string{"reason"}},
		{Name: "karpenter_pods_eviction_requests_total", Type: "counter", Labels: []string{"code"}},
		{Name: "karpenter_scheduler_queue_depth", Type: "gauge", Labels: []string{"controller", "scheduling_id"}},
		{Name: "karpenter_scheduler_unfinished_work_seconds", Type: "gauge", Labels: []string{"controller", "scheduling_id"}},
		{Name: "karpenter_scheduler_unschedulable_pods_count", Type: "gauge", Labels: []string{"controller"}},
		{Name: "karpenter_scheduler_ignored_pods_count", Type: "gauge"},
		{Name: "karpenter_scheduler_pending_pods_by_effective_zone_count", Type: "gauge", Labels: []string{"controller", "zone"}},
		{Name: "karpenter_scheduler_scheduling_duration_seconds", Type: "histogram", Labels: []string{"controller"}, Buckets: upstreamDuration},
		{Name: "karpenter_voluntary_disruption_eligible_nodes", Type: "gauge", Labels: []string{"reason"}},
		{Name: "karpenter_voluntary_disruption_decisions_total", Type: "counter", Labels: []string{"decision", "reason", "consolidation_type"}},
		{Name: "karpenter_voluntary_disruption_decision_evaluation_duration_seconds", Type: "histogram",
			Labels: []string{"reason", "consolidation_type"}, Buckets: upstreamDuration},
		{Name: "karpenter_interruption_message_queue_duration_seconds", Type: "histogram", Buckets: upstreamDuration},
		{Name: "karpenter_interruption_received_messages_total", Type: "counter", Labels: []string{"message_type"}},
		// aws/karpenter-provider-aws pkg/controllers/interruption/metrics.go (InstanceStatusUnhealthy).
		{Name: "karpenter_interruption_instance_status_unhealthy_total", Type: "counter", Labels: []string{"category"}},
		{Name: "karpenter_cloudprovider_duration_seconds", Type: "histogram", Labels: []string{"controller", "method", "provider"},
			Buckets: prometheus.DefBuckets},
		{Name: "karpenter_cloudprovider_errors_total", Type: "counter", Labels: []string{"controller", "method", "provider", "error"}},
		{Name: "karpenter_cloudprovider_instance_type_cpu_cores", Type: "gauge", Labels: []string{"instance_type"}},
		{Name: "karpenter_cloudprovider_instance_type_memory_bytes", Type: "gauge", Labels: []string{"instance_type"}},
		{Name: "karpenter_cloudprovider_instance_type_offering_available", Type: "gauge", Labels: []string{"instance_type", "capacity_type", "zone"}},
		{Name: "karpenter_cloudprovider_instance_type_offering_price_estimate", Type: "gauge", Labels: []string{"instance_type", "capacity_type", "zone"}},
		{Name: "karpenter_pods_scheduling_decision_duration_seconds", Type: "histogram", Buckets: upstreamDuration},
		{Name: "karpenter_pods_provisioning_bound_duration_seconds", Type: "histogram", Buckets: upstreamDuration},
		{Name: "karpenter_pods_provisioning_startup_duration_seconds", Type: "histogram", Buckets: upstreamDuration},
		{Name: "karpenter_pods_provisioning_unbound_time_seconds", Type: "gauge", Labels: []string{"name", "namespace"}},
		{Name: "karpenter_pods_provisioning_unstarted_time_seconds", Type: "gauge", Labels: []string{"name", "namespace"}},
		{Name: "karpenter_pods_provisioning_scheduling_undecided_time_seconds", Type: "gauge", Labels: []string{"name", "namespace"}},
		// aws/karpenter-provider-aws pkg/batcher/metrics.go and pkg/providers/instance/metrics.go.
		{Name: "karpenter_cloudprovider_batcher_batch_time_seconds", Type: "histogram", Labels: []string{"batcher"}, Buckets: upstreamDuration},
		{Name: "karpenter_cloudprovider_batcher_batch_size", Type: "histogram", Labels: []string{"batcher"},
			Buckets: []float64{1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 175, 200,
				225, 250, 275, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000}},
		{Name: "karpenter_cloudprovider_instance_launch_failures_total", Type: "counter", Labels: []string{"zone", "zone_id", "capacity_type", "reason"}},
		{Name: "karpenter_cloudprovider_instance_termination_failures_total", Type: "counter", Labels: []string{"zone", "zone_id"}},
		{Name: "karpenter_ec2nodeclasses_userdata_bytes", Type: "gauge", Labels: []string{"nodeclass"}},
		// awslabs/operatorpkg's status controller as Karpenter and the AWS provider configure it.
		{Name: "operator_nodeclaim_status_condition_count", Type: "gauge", Labels: []string{"namespace", "name", "type", "status", "reason",
			"karpenter_k8s_aws_ec2nodeclass", "karpenter_sh_nodepool"}},
		{Name: "operator_nodeclaim_status_condition_transition_seconds", Type: "histogram", Labels: []string{"type", "status",
			"karpenter_k8s_aws_ec2nodeclass", "karpenter_sh_nodepool"}, Buckets: prometheus.ExponentialBuckets(0.5, 2, 15)},
		{Name: "operator_node_status_condition_transitions_total", Type: "counter", Labels: []string{"type", "status", "reason",
			"karpenter_k8s_aws_ec2nodeclass", "karpenter_sh_nodepool", "karpenter_sh_initialized"}},
		{Name: "operator_nodepool_termination_duration_seconds", Type: "histogram", Buckets: prometheus.ExponentialBuckets(0.5, 2, 15)},
		{Name: "operator_ec2nodeclass_status_condition_transition_seconds", Type: "histogram", Labels: []string{"type", "status"},
			Buckets: prometheus.DefBuckets},
		{Name: "operator_status_condition_count", Type: "gauge", Labels: []string{"namespace", "name", "type", "status", "reason", "group", "kind"}},
		{Name: "operator_termination_duration_seconds", Type: "histogram", Labels: []string{"group", "kind"}, Buckets: prometheus.DefBuckets},
	}
	catalog := metrics.NewCatalog()
	controllers.DescribeMetrics(catalog, fake.New())
	have := map[string]metrics.Family{}
	for _, f := range catalog.Families() {
		have[f.Name] = f
	}
	for _, w := range want {
		h, ok := have[w.Name]
		if !ok {
			t.Errorf("%s is not declared", w.Name)
			continue
		}
		if h.Type != w.Type {
			t.Errorf("%s is a %s, upstream's is a %s", w.Name, h.Type, w.Type)
		}
		if !slices.Equal(sorted(h.Labels), sorted(w.Labels)) {
			t.Errorf("%s has labels %v, upstream's has %v", w.Name, h.Labels, w.Labels)
		}
		if !slices.Equal(h.Buckets, w.Buckets) {
			t.Errorf("%s has buckets %v, upstream's has %v", w.Name, h.Buckets, w.Buckets)
		}
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
