package e2e_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/workload"
)

// BenchmarkPlanFidelity measures how closely the cluster follows Lathe's plan: Karpenter's diverse pod mix
// (workload.Diverse) created as plain Pods at once, on the local cluster with the tutorial NodePool. It
// reports the real $/h of the nodes over the $/h of the plan solver.Solve makes for the same pods and pool (as
// `lathe simulate` does), the share of pods running on the node their last Nominated event named,
// provisioning passes, NodeClaims created, and seconds until every pod runs: as a watch of the pods saw it
// (s-to-running), and as the list that the benchmark waits with confirmed it (s-to-running-polled, the only
// measure before 2026-12-06; under load a list of the pods takes up to seconds). Run it with:
//
//	go test ./test/e2e -run '^$' -bench PlanFidelity -benchtime 1x
func BenchmarkPlanFidelity(b *testing.B) {
	for _, n := range []int{500, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				planFidelity(b, fmt.Sprintf("fidelity-%d-%d", n, i), n)
			}
		})
	}
}

// planFidelity runs one round of BenchmarkPlanFidelity with n pods in namespace ns.
func planFidelity(b *testing.B, ns string, n int) {
	b.StopTimer()
	ctx := context.Background()
	namespace(b, ns)
	pods := workload.Diverse(n)
	for _, p := range pods {
		p.Namespace = ns
		// Consolidation (the pool's consolidateAfter is 1m) must not evict the pods while they are measured.
		p.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
		p.Spec.TerminationGracePeriodSeconds = ptr(int64(0))
		p.Spec.Containers[0].Image = "registry.k8s.io/pause:3.10"
	}
	pool, its := tutorialPoolTypes(b)
	plan, err := solver.Solve(ctx, solver.Input{Pods: pods, NodePools: []*v1.NodePool{pool}, InstanceTypes: map[string]cloudprovider.InstanceTypes{pool.Name: its}}, solver.Options{})
	if err != nil {
		b.Fatal(err)
	}
	overSkewIfLast(b, plan, pods)
	passesBefore := provisioningPasses(b)
	creator := applyClient(b)
	hints := trackHints(b, ns)
	b.StartTimer()
	start := time.Now()
	workqueue.ParallelizeUntil(ctx, 32, len(pods), func(i int) {
		// A loaded API server times a create out now and then; kubectl would be retried too.
		err := retry.OnError(retry.DefaultBackoff, func(err error) bool { return !apierrors.IsAlreadyExists(err) }, func() error {
			return creator.Create(ctx, pods[i].DeepCopy())
		})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			b.Error(err)
		}
	})
	createdIn := time.Since(start)
	notRunning, listed, err := waitAllRunning(ctx, ns, pods, hints)
	if err != nil {
		b.Fatalf("waiting for %d running pods: %v; %d pods in the API, not running: %s", n, err, listed, describePods(notRunning, 10))
	}
	polled := time.Since(start)
	b.StopTimer()
	// A list that finds every pod Running may come before the watch has delivered the last of them.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, all := hints.allRunningAt(n)
		return all, nil
	}); err != nil {
		b.Fatalf("the pod watch did not see all %d pods Running: %v", n, err)
	}
	lastRunning, _ := hints.allRunningAt(n)
	elapsed := lastRunning.Sub(start)
	real, claims := clusterPrice(b, its)
	b.ReportMetric(real/plan.PricePerHour, "real/plan")
	b.ReportMetric(real, "real$/h")
	b.ReportMetric(plan.PricePerHour, "plan$/h")
	share, seen := onPlannedNode(b, ns)
	b.ReportMetric(share, "onPlanned")
	b.ReportMetric(seen, "nominationSeen")
	onHinted, hinted := hints.finish(n)
	diagnose(b, ns, hints)
	b.ReportMetric(onHinted, "onHinted")
	b.ReportMetric(hinted, "hinted")
	writes, boundHinted := hints.churn(n)
	b.ReportMetric(writes, "hintWrites/pod")
	b.ReportMetric(boundHinted, "boundHinted")
	b.ReportMetric(provisioningPasses(b)-passesBefore, "passes")
	b.ReportMetric(float64(claims), "nodeclaims")
	b.ReportMetric(float64(len(plan.NodeClaims)), "plannedNodes")
	b.ReportMetric(elapsed.Seconds(), "s-to-running")
	b.ReportMetric(polled.Seconds(), "s-to-running-polled")
	// Karpenter's first batch closes BATCH_MAX_DURATION (10s here) after the first pod: pods created later
	// are planned in a later pass.
	b.ReportMetric(createdIn.Seconds(), "s-to-create")
	cleanUp(b, ns)
	b.StartTimer()
}

// waitAllRunning waits until a list of the namespace's pods finds every one of pods Running. It lists when
// the pod watch has seen every pod Running, and every listEvery meanwhile to notice a pod deleted. It used to
// list every 250 ms: hundreds of pods four times a second, on the API server that paces the whole burst
// (lists, nearly all of them these, were 6 % of its CPU in one profile), load that no user's cluster has. It
// returns the pods the last list found not Running and how many pods it found at all.
func waitAllRunning(ctx context.Context, ns string, pods []*corev1.Pod, hints *hintTracker) ([]corev1.Pod, int, error) {
	const listEvery = 5 * time.Second
	n := len(pods)
	var notRunning []corev1.Pod
	var listed int
	var lastList time.Time
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		if _, all := hints.allRunningAt(n); !all && time.Since(lastList) < listEvery {
			return false, nil
		}
		lastList = time.Now()
		var list corev1.PodList
		if err := s.kubeClient.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		listed, notRunning = len(list.Items), notRunning[:0]
		if listed < n {
			// Every create returned before the first list, so a pod that is missing was deleted.
			return false, fmt.Errorf("pods deleted: %s", describeMissing(ctx, ns, pods, list.Items))
		}
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodRunning {
				notRunning = append(notRunning, p)
			}
		}
		return len(notRunning) == 0, nil
	})
	return notRunning, listed, err
}

// applyClient is a client as fast as kubectl's (QPS 50, burst 300), so the pods are created at once rather
// than at the test client's default 5 per second.
func applyClient(b *testing.B) client.Client {
	cfg := rest.CopyConfig(s.cluster.RESTConfig())
	cfg.QPS, cfg.Burst = 50, 300
	c, err := client.New(cfg, client.Options{Scheme: s.kubeClient.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// tutorialPoolTypes returns the tutorial NodePool and the instance types the simulated provider offers it.
func tutorialPoolTypes(b *testing.B) (*v1.NodePool, cloudprovider.InstanceTypes) {
	pool := &v1.NodePool{}
	if err := s.kubeClient.Get(context.Background(), types.NamespacedName{Name: "default"}, pool); err != nil {
		b.Fatal(err)
	}
	its, err := newSimCloud(b).GetInstanceTypes(context.Background(), pool)
	if err != nil {
		b.Fatal(err)
	}
	return pool, its
}

// clusterPrice sums the price of every Lathe node's offering (instance type, zone, capacity type) and counts
// the NodeClaims.
func clusterPrice(b *testing.B, its cloudprovider.InstanceTypes) (float64, int) {
	ctx := context.Background()
	var nodes corev1.NodeList
	if err := s.kubeClient.List(ctx, &nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, node := range nodes.Items {
		total += offeringPrice(its, node.Labels)
	}
	var claims v1.NodeClaimList
	if err := s.kubeClient.List(ctx, &claims); err != nil {
		b.Fatal(err)
	}
	return total, len(claims.Items)
}

func offeringPrice(its cloudprovider.InstanceTypes, labels map[string]string) float64 {
	for _, it := range its {
		if it.Name != labels[v1.LabelInstanceType] {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == labels[v1.LabelTopologyZone] && o.CapacityType == labels[v1.CapacityTypeLabelKey] {
				return o.Price
			}
		}
	}
	return 0
}

// nominatedTarget reads "node/<name>" or "nodeclaim/<name>" from a Nominated event's message.
var nominatedTarget = regexp.MustCompile(`(node|nodeclaim)/(\S+)$`)

// onPlannedNode is the share of the namespace's pods that run on the node their latest Nominated event named
// (the node itself, or the Node of the NodeClaim), among the pods whose Nominated event the API server has,
// and that coverage: the event broadcaster drops events when hundreds come at once.
func onPlannedNode(b *testing.B, ns string) (float64, float64) {
	ctx := context.Background()
	var events corev1.EventList
	if err := s.kubeClient.List(ctx, &events, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	type nomination struct {
		kind, name string
		at         time.Time
	}
	latest := map[string]nomination{}
	for _, e := range events.Items {
		m := nominatedTarget.FindStringSubmatch(e.Message)
		if e.Reason != "Nominated" || m == nil {
			continue
		}
		at := e.LastTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if prev, ok := latest[e.InvolvedObject.Name]; !ok || !at.Before(prev.at) {
			latest[e.InvolvedObject.Name] = nomination{kind: m[1], name: m[2], at: at}
		}
	}
	var claims v1.NodeClaimList
	if err := s.kubeClient.List(ctx, &claims); err != nil {
		b.Fatal(err)
	}
	nodeOf := map[string]string{}
	for _, c := range claims.Items {
		nodeOf[c.Name] = c.Status.NodeName
	}
	var pods corev1.PodList
	if err := s.kubeClient.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	on, seen := 0, 0
	for _, p := range pods.Items {
		nom, ok := latest[p.Name]
		if !ok {
			continue
		}
		seen++
		planned := nom.name
		if nom.kind == "nodeclaim" {
			planned = nodeOf[nom.name]
		}
		if planned != "" && planned == p.Spec.NodeName {
			on++
		}
	}
	return float64(on) / float64(max(seen, 1)), float64(seen) / float64(max(len(pods.Items), 1))
}

// provisioningPasses reads how many provisioning passes solved for pending pods, from Lathe's metrics.
func provisioningPasses(b *testing.B) float64 {
	var text string
	eventually(b, time.Minute, "lathe's metrics", func(context.Context) (bool, error) {
		var err error
		text, err = scrape()
		return err == nil, nil
	})
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "karpenter_provisioner_scheduling_duration_seconds_count"); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest[strings.LastIndex(rest, " ")+1:]), 64)
			if err != nil {
				b.Fatal(err)
			}
			return v
		}
	}
	return 0
}

// describePods says, for at most max pods, where each one is and why it is not running: its phase, node,
// nominated node and the message of its PodScheduled condition.
func describePods(pods []corev1.Pod, max int) string {
	var out []string
	for i, p := range pods {
		if i == max {
			out = append(out, fmt.Sprintf("and %d more", len(pods)-max))
			break
		}
		scheduled := ""
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				scheduled = fmt.Sprintf(" PodScheduled=%s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		out = append(out, fmt.Sprintf("%s (%s, node %q, nominated %q%s)", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.NominatedNodeName, scheduled))
	}
	return strings.Join(out, "; ")
}

// describeMissing names the pods of want that are not in have, with the events the API server still keeps
// about each.
func describeMissing(ctx context.Context, ns string, want []*corev1.Pod, have []corev1.Pod) string {
	present := map[string]bool{}
	for _, p := range have {
		present[p.Name] = true
	}
	var events corev1.EventList
	_ = s.kubeClient.List(ctx, &events, client.InNamespace(ns))
	var out []string
	for _, p := range want {
		if present[p.Name] {
			continue
		}
		var said []string
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == p.Name {
				said = append(said, fmt.Sprintf("%s %s: %s", e.Source.Component, e.Reason, e.Message))
			}
		}
		out = append(out, fmt.Sprintf("%s [%s]", p.Name, strings.Join(said, "; ")))
	}
	return strings.Join(out, "; ")
}
