package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// TestMetricsUnderKarpenterNames runs a pod through launch and termination, then scrapes lathe's /metrics
// and checks that the series dashboards and alerts written for Karpenter read are there.
func TestMetricsUnderKarpenterNames(t *testing.T) {
	ns := namespace(t, "metrics")
	deployment(t, ns, "web", 1, "1", nil)
	runningPods(t, ns, "web", 1, 2*time.Minute)
	ctx := context.Background()
	if err := s.kubeClient.DeleteAllOf(ctx, &v1.NodeClaim{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "a nodeclaim terminated and its pod running again", func(ctx context.Context) (bool, error) {
		body, err := scrape()
		return err == nil && strings.Contains(body, "karpenter_nodeclaims_terminated_total{"), err
	})
	runningPods(t, ns, "web", 1, 2*time.Minute)
	var body string
	eventually(t, time.Minute, "the nodepool usage series", func(ctx context.Context) (bool, error) {
		var err error
		body, err = scrape()
		return err == nil && strings.Contains(body, `karpenter_nodepools_usage{nodepool="default",resource_type="cpu"}`), err
	})
	for _, name := range []string{
		"karpenter_nodeclaims_created_total{",
		"karpenter_nodeclaims_terminated_total{",
		"karpenter_nodes_created_total{",
		"karpenter_nodes_terminated_total{",
		"karpenter_scheduler_queue_depth{",
		"karpenter_scheduler_scheduling_duration_seconds_bucket{",
		"karpenter_provisioner_scheduling_duration_seconds_bucket{",
		"karpenter_pods_startup_duration_seconds_count",
		"karpenter_nodes_termination_duration_seconds_bucket{",
		`karpenter_nodepools_usage{nodepool="default",resource_type="cpu"}`,
		`karpenter_nodepools_limit{nodepool="default",resource_type="cpu"} 1000`,
		"karpenter_build_info{",
	} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics has no %s", name)
		}
	}
}

// scrape returns lathe's /metrics page.
func scrape() (string, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", s.lathe.MetricsPort))
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
