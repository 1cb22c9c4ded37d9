package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// BenchmarkPendingToRunning measures how long 1,000 pending pods take to run on nodes Lathe launches, from
// the Deployment's creation to the last pod Running, on the local cluster (real apiserver, controller-manager,
// scheduler, kwok). Run it with: go test ./test/e2e -run '^$' -bench PendingToRunning -benchtime 1x
func BenchmarkPendingToRunning(b *testing.B) {
	const pods = 1000
	for i := 0; i < b.N; i++ {
		ns := namespace(b, fmt.Sprintf("bench-%d", i))
		start := time.Now()
		deployment(b, ns, "bench", pods, "250m", nil)
		runningPods(b, ns, "bench", pods, 10*time.Minute)
		elapsed := time.Since(start)
		var claims v1.NodeClaimList
		if err := s.kubeClient.List(context.Background(), &claims); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(elapsed.Seconds(), "s/1000pods")
		b.ReportMetric(float64(len(claims.Items)), "nodes")
		b.ReportMetric(float64(pods)/elapsed.Seconds(), "pods/s")
		b.StopTimer()
		cleanUp(b, ns)
		b.StartTimer()
	}
}
