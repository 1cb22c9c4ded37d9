package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
)

// rareFamilies are listed in docs/metrics.txt but only get a series on events the scenario does not cause
// (or only while they last).
var rareFamilies = map[string]string{
	// deleted at the end of every scheduling pass (as upstream's): only seen mid-pass.
	"karpenter_scheduler_unfinished_work_seconds": "mid-pass only",
	// node repair (NodeRepair gate, off by default) and balanced consolidation.
	"karpenter_nodeclaims_unhealthy_disrupted_total": "node repair",
	"karpenter_consolidation_moves_total":            "balanced consolidation",
	"karpenter_consolidation_score":                  "balanced consolidation",
	// failures: a decision whose validation or execution fails, a cloud provider call that errs, a
	// consolidation that runs out of time, a candidate consolidation looked at and kept.
	"karpenter_voluntary_disruption_failed_validations_total":    "failed validation",
	"karpenter_voluntary_disruption_queue_failures_total":        "failed disruption",
	"karpenter_cloudprovider_errors_total":                       "cloud provider error",
	"karpenter_nodepools_cost_tracker_errors_total":              "pricing a pool failed",
	"karpenter_voluntary_disruption_consolidation_skipped_total": "candidate kept",
	// only while an object is terminating.
	"operator_termination_current_time_seconds":              "while terminating",
	"operator_nodeclaim_termination_current_time_seconds":    "while terminating",
	"operator_node_termination_current_time_seconds":         "while terminating",
	"operator_nodepool_termination_current_time_seconds":     "while terminating",
	"operator_ec2nodeclass_termination_current_time_seconds": "while terminating",
	// a NodePool or EC2NodeClass deleted (the test's pool goes when it ends).
	"operator_nodepool_termination_duration_seconds":     "pool deleted",
	"operator_ec2nodeclass_termination_duration_seconds": "node class deleted",
	// only while a pod waits to be bound or to start.
	"karpenter_pods_unbound_time_seconds":                           "while a pod is pending",
	"karpenter_pods_unstarted_time_seconds":                         "while a pod is pending",
	"karpenter_pods_provisioning_unbound_time_seconds":              "while a pod is pending",
	"karpenter_pods_provisioning_unstarted_time_seconds":            "while a pod is pending",
	"karpenter_pods_provisioning_scheduling_undecided_time_seconds": "while a pod is pending",
	// the AWS provider's (the test runs the simulated cloud).
	"karpenter_cloudprovider_batcher_batch_size":                  "AWS provider",
	"karpenter_cloudprovider_batcher_batch_time_seconds":          "AWS provider",
	"karpenter_cloudprovider_instance_launch_failures_total":      "AWS provider",
	"karpenter_cloudprovider_instance_termination_failures_total": "AWS provider",
	"karpenter_ec2nodeclasses_userdata_bytes":                     "AWS provider",
	"karpenter_interruption_instance_status_unhealthy_total":      "AWS provider",
	// the test cluster runs no DaemonSet.
	"karpenter_nodes_total_daemon_requests": "no DaemonSet pods",
	"karpenter_nodes_total_daemon_limits":   "no DaemonSet pods",
	// a condition seen changing status; pools and node classes get theirs before they are first seen.
	"operator_nodepool_status_condition_transition_seconds":     "condition change observed",
	"operator_ec2nodeclass_status_condition_transition_seconds": "condition change observed",
	// a kwok Node may be Ready before Lathe first sees it (seen missing under load).
	"operator_node_status_condition_transition_seconds": "condition change observed",
}

// acceptance are the families the seeds name, with upstream Karpenter's label names (from its code, not
// from docs/metrics.txt): a running Lathe must serve each with exactly these labels.
var acceptance = map[string][]string{
	"karpenter_scheduler_queue_depth":                {"controller", "scheduling_id"},
	"karpenter_nodes_termination_duration_seconds":   {"nodepool"},
	"karpenter_nodeclaims_created_total":             {"min_values_relaxed", "nodepool", "reason"},
	"karpenter_voluntary_disruption_eligible_nodes":  {"reason"},
	"karpenter_voluntary_disruption_decisions_total": {"consolidation_type", "decision", "reason"},
}

// TestMetricsMatchDocs provisions four nodes, terminates one by deleting its NodeClaim (its pod is evicted),
// interrupts another through the simulated cloud, then scales down so that consolidation removes the empty
// nodes; it parses lathe's /metrics (Prometheus text format) and compares every karpenter_* and
// operator_* family with docs/metrics.txt: same names, types and label names both ways, except
// rareFamilies, which may be absent.
func TestMetricsMatchDocs(t *testing.T) {
	ns := namespace(t, "metrics")
	shrinkPool(t, "metrics")
	ctx := context.Background()
	eventually(t, time.Minute, "the metrics pool to be ready", func(ctx context.Context) (bool, error) {
		pool := &v1.NodePool{}
		err := s.kubeClient.Get(ctx, client.ObjectKey{Name: "metrics"}, pool)
		return err == nil && meta.IsStatusConditionTrue(pool.Status.Conditions, v1.ConditionTypeReady), err
	})
	onePerNode := func(spec *corev1.PodSpec) {
		onPool("metrics")(spec)
		spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			}},
		}}
	}
	deployment(t, ns, "web", 4, "1", onePerNode)
	pods := runningPods(t, ns, "web", 4, 2*time.Minute)

	// Termination: deleting a NodeClaim drains its node (the pod is evicted) and terminates the instance.
	if err := s.kubeClient.Delete(ctx, claimOf(t, "metrics", pods[0].Spec.NodeName)); err != nil {
		t.Fatal(err)
	}
	nodeGone(t, pods[0].Spec.NodeName)

	// Interruption: the simulated cloud terminates another instance and queues the message.
	victim := &corev1.Node{}
	if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: pods[1].Spec.NodeName}, victim); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(victim.DeepCopy())
	victim.Annotations[sim.InterruptAnnotationKey] = string(sim.InterruptionTerminating)
	if err := s.kubeClient.Patch(ctx, victim, patch); err != nil {
		t.Fatal(err)
	}
	nodeGone(t, victim.Name)

	// Consolidation: one replica stays (the replicaset removes the pending replacements first); the nodes left
	// empty are removed.
	scale(t, ns, "web", 1)
	eventually(t, 3*time.Minute, "the pool to shrink to one node", func(ctx context.Context) (bool, error) {
		var claims v1.NodeClaimList
		err := s.kubeClient.List(ctx, &claims, client.MatchingLabels{v1.NodePoolLabelKey: "metrics"})
		return err == nil && len(claims.Items) == 1, err
	})

	docs := readMetricsList(t)
	var served map[string]string
	// Gauges refresh on their own periods: give every family that is not rare a minute to be there, then
	// compare what the last scrape served.
	_ = wait.PollUntilContextTimeout(ctx, 2*time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		families, err := scrapeFamilies()
		if err != nil {
			return false, err
		}
		served = map[string]string{}
		for name, f := range families {
			if strings.HasPrefix(name, "karpenter_") || strings.HasPrefix(name, "operator_") {
				served[name] = fmt.Sprintf("%s %s", strings.ToLower(f.GetType().String()), labelNames(f))
			}
		}
		for name := range docs {
			if _, ok := served[name]; !ok && rareFamilies[name] == "" {
				return false, nil
			}
		}
		return true, nil
	})
	for name, line := range served {
		if want, ok := docs[name]; !ok {
			t.Errorf("/metrics serves %s (%s), which docs/metrics.txt does not list", name, line)
		} else if want != line {
			t.Errorf("%s: /metrics serves %q, docs/metrics.txt says %q", name, line, want)
		}
	}
	for name := range docs {
		if _, ok := served[name]; !ok && rareFamilies[name] == "" {
			t.Errorf("docs/metrics.txt lists %s, which /metrics does not serve", name)
		}
	}
	for name, labels := range acceptance {
		if have := served[name]; !strings.HasSuffix(have, " "+strings.Join(labels, ",")) {
			t.Errorf("%s: /metrics serves %q, want labels %v", name, have, labels)
		}
	}
}

// nodeGone waits until the node is deleted.
func nodeGone(t *testing.T, node string) {
	t.Helper()
	eventually(t, 2*time.Minute, "node "+node+" to be gone", func(ctx context.Context) (bool, error) {
		return gone(ctx, client.ObjectKey{Name: node}, &corev1.Node{})
	})
}

// scrapeFamilies parses lathe's /metrics.
func scrapeFamilies() (map[string]*dto.MetricFamily, error) {
	text, err := scrape()
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(text))
}

// labelNames is the sorted, comma-separated label names of the family's series (without le and quantile,
// which the text format folds into histograms and summaries), or "-".
func labelNames(f *dto.MetricFamily) string {
	var names []string
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if !slices.Contains(names, l.GetName()) {
				names = append(names, l.GetName())
			}
		}
	}
	if len(names) == 0 {
		return "-"
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// readMetricsList reads docs/metrics.txt: name → "type labels".
func readMetricsList(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(), "docs", "metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) != 3 {
			t.Fatalf("docs/metrics.txt: malformed line %q", lines.Text())
		}
		out[fields[0]] = fields[1] + " " + fields[2]
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// scrape returns lathe's /metrics page as text.
func scrape() (string, error) { return scrapePort(s.lathe.MetricsPort) }

// scrapePort returns the /metrics page a Lathe serves on the loopback port, as text.
func scrapePort(port int) (string, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(b), nil
}
