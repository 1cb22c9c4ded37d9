package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// shrinkShapes are the workloads of BenchmarkConsolidationEndToEnd: eight Deployments of different sizes.
var shrinkShapes = []struct{ cpu, memory string }{
	{"250m", "512Mi"}, {"500m", "1Gi"}, {"1", "2Gi"}, {"1", "6Gi"}, {"2", "4Gi"}, {"3", "12Gi"}, {"4", "8Gi"}, {"6", "24Gi"},
}

// BenchmarkConsolidationEndToEnd scales a mixed workload of 1,000 pods (eight Deployments of different sizes) on
// the local cluster down to 100 and measures what consolidation does about it: the seconds from the scale-down
// until the node set stops changing (no node added or removed for a minute, nothing being deleted), the
// cluster's $/h then over the $/h of a fresh plan (solver.Solve) for the 100 pods left, and the NodeClaims
// consolidation deleted and launched. The pool (the tutorial's, without its cpu limit) consolidates after 5 s
// with a 100 % budget. Run it with:
//
//	go test ./test/e2e -run '^$' -bench ConsolidationEndToEnd -benchtime 1x -timeout 60m
func BenchmarkConsolidationEndToEnd(b *testing.B) {
	for i := 0; i < b.N; i++ {
		consolidationEndToEnd(b, fmt.Sprintf("shrink-bench-%d", i), 1000, 100)
	}
}

func consolidationEndToEnd(b *testing.B, name string, from, to int) {
	b.StopTimer()
	ctx := context.Background()
	ns := namespace(b, name)
	tutorialPool(b, name, func(pool *v1.NodePool) {
		consolidateQuickly(pool)
		pool.Spec.Limits = nil // the tutorial's 1,000 cpu would hold back a third of the 1,000 pods
	})
	for i, shape := range shrinkShapes {
		deployment(b, ns, fmt.Sprintf("shape-%d", i), int32(share(from, i)), shape.cpu, func(p *corev1.PodSpec) {
			onPool(name)(p)
			p.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(shape.memory)
		})
	}
	eventually(b, 15*time.Minute, fmt.Sprintf("%d running pods", from), retryingErrors(runningIn(ns, from)))
	before, err := poolNodes(ctx, name)
	if err != nil {
		b.Fatal(err)
	}
	claimsBefore := claimNames(b)
	_, its := tutorialPoolTypes(b)

	b.StartTimer()
	start := time.Now()
	for i := range shrinkShapes {
		scale(b, ns, fmt.Sprintf("shape-%d", i), int32(share(to, i)))
	}
	stableAt := waitStable(b, ns, name, to, time.Minute, 30*time.Minute)
	b.StopTimer()

	after, err := poolNodes(ctx, name)
	if err != nil {
		b.Fatal(err)
	}
	real := 0.0
	for _, n := range after {
		real += offeringPrice(its, n.Labels)
	}
	fresh := freshPlanPrice(b, ns, name, its)
	claimsAfter := claimNames(b)
	b.ReportMetric(stableAt.Sub(start).Seconds(), "s-to-stable")
	b.ReportMetric(real/fresh, "cost/fresh")
	b.ReportMetric(real, "real$/h")
	b.ReportMetric(fresh, "fresh$/h")
	b.ReportMetric(float64(len(before)), "nodes-before")
	b.ReportMetric(float64(len(after)), "nodes-after")
	b.ReportMetric(float64(countMissing(claimsBefore, claimsAfter)), "claims-deleted")
	b.ReportMetric(float64(countMissing(claimsAfter, claimsBefore)), "claims-launched")
	cleanUp(b, ns)
	b.StartTimer()
}

// share is the i-th Deployment's part of n pods spread over the shapes.
func share(n, i int) int {
	k := len(shrinkShapes)
	if i < n%k {
		return n/k + 1
	}
	return n / k
}

// retryingErrors makes a poll look again after an error rather than fail: the benchmark loads the API server,
// which drops a request now and then.
func retryingErrors(cond func(context.Context) (bool, error)) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		return ok && err == nil, nil
	}
}

func runningIn(ns string, want int) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		var list corev1.PodList
		if err := s.kubeClient.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero() {
				running++
			}
		}
		return running == want, nil
	}
}

// waitStable waits until want pods run in the namespace and the pool's set of nodes and NodeClaims has not
// changed for quiet, with nothing of the pool being deleted, and returns when it last changed.
func waitStable(b *testing.B, ns, pool string, want int, quiet, timeout time.Duration) time.Time {
	var last string
	changed := time.Now()
	eventually(b, timeout, "the pool's nodes to settle", func(ctx context.Context) (bool, error) {
		state, deleting, err := poolState(ctx, pool)
		if err != nil {
			return false, nil // a loaded API server drops a list now and then: look again
		}
		if state != last || deleting {
			last, changed = state, time.Now()
			return false, nil
		}
		ok, err := runningIn(ns, want)(ctx)
		return err == nil && ok && time.Since(changed) >= quiet, nil
	})
	return changed
}

// poolState is the sorted names of the pool's nodes and NodeClaims, and whether any of them is being deleted.
func poolState(ctx context.Context, pool string) (string, bool, error) {
	nodes, err := poolNodes(ctx, pool)
	if err != nil {
		return "", false, err
	}
	var claims v1.NodeClaimList
	if err := s.kubeClient.List(ctx, &claims, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		return "", false, err
	}
	var names []string
	deleting := false
	for _, n := range nodes {
		names = append(names, "node/"+n.Name)
		deleting = deleting || !n.DeletionTimestamp.IsZero()
	}
	for _, c := range claims.Items {
		names = append(names, "nodeclaim/"+c.Name)
		deleting = deleting || !c.DeletionTimestamp.IsZero()
	}
	slices.Sort(names)
	return strings.Join(names, ","), deleting, nil
}

// freshPlanPrice is the $/h of the plan solver.Solve makes for the namespace's running pods on an empty
// cluster with the pool.
func freshPlanPrice(b *testing.B, ns, pool string, its cloudprovider.InstanceTypes) float64 {
	ctx := context.Background()
	var list corev1.PodList
	if err := s.kubeClient.List(ctx, &list, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		p := list.Items[i].DeepCopy()
		if p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() {
			continue
		}
		p.Spec.NodeName = ""
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		pods = append(pods, p)
	}
	nodePool := &v1.NodePool{}
	if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: pool}, nodePool); err != nil {
		b.Fatal(err)
	}
	plan, err := solver.Solve(ctx, solver.Input{Pods: pods, NodePools: []*v1.NodePool{nodePool},
		InstanceTypes: map[string]cloudprovider.InstanceTypes{pool: its}}, solver.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return plan.PricePerHour
}

func claimNames(b *testing.B) []string {
	var claims v1.NodeClaimList
	if err := s.kubeClient.List(context.Background(), &claims); err != nil {
		b.Fatal(err)
	}
	var out []string
	for _, c := range claims.Items {
		out = append(out, c.Name)
	}
	return out
}

// countMissing counts the names of a that b lacks.
func countMissing(a, b []string) int {
	n := 0
	for _, name := range a {
		if !slices.Contains(b, name) {
			n++
		}
	}
	return n
}
