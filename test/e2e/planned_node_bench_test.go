package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// openings numbers the runs of BenchmarkPodWaitsForItsPlannedNode.
var openings int

// BenchmarkPodWaitsForItsPlannedNode measures how often a pending pod waits for the Node Lathe planned it
// onto when another Node that fits it opens first (openingPlacement): the share of runs in which "free"
// lands on its planned Node A, reported as onPlanned. It is a benchmark, not a test, because the
// kube-scheduler v1.37 defeats it some of the time: when B opens for free only, free's failed attempt
// clears its hint, which requeues small and filler, whose attempts fail on B (still tainted for them) and
// drop their hold on B's room, and free's next attempt then fits on B (docs/performance.md, plan fidelity).
// As a test it failed in a CI run on a loaded machine (5 of 5 runs landed on the planned Node on a quiet
// one, 2026-12-01). TestPodLandsOnItsPlannedNode is the test of a hint steering a pod: there the pod
// cannot be tried while only the other Node is open, so no failed attempt clears the hints that matter.
//
//	go test ./test/e2e -run '^$' -bench PodWaitsForItsPlannedNode -benchtime 5x
func BenchmarkPodWaitsForItsPlannedNode(b *testing.B) {
	landed := 0
	for i := 0; i < b.N; i++ {
		openings++ // the benchmark runs with b.N = 1 first: every run gets new names, so old events don't mislead
		pool := fmt.Sprintf("opening-%d", openings)
		ns := namespace(b, pool)
		planPool(b, pool)
		if got := openingPlacement(b, ns, pool, true); got.landed == got.planned["free"] {
			landed++
		}
		cleanUp(b, ns)
	}
	b.ReportMetric(float64(landed)/float64(b.N), "onPlanned")
}

// Startup taints of the plan pool that the test takes off itself, so that the kube-scheduler sees the two
// Nodes become schedulable one after the other, as on a cluster whose instances boot at different speeds.
const (
	holdFirst  = "lathe-e2e/first"
	holdSecond = "lathe-e2e/second"
)

// planPool is the tutorial pool on c5.large only (1930m allocatable cpu), so that the plan is unique, with
// the two startup taints.
func planPool(t testing.TB, name string) {
	tutorialPool(t, name, func(pool *v1.NodePool) {
		pool.Spec.Template.Spec.Requirements = append(pool.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
			Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.large"}})
		pool.Spec.Template.Spec.StartupTaints = []corev1.Taint{
			{Key: holdFirst, Effect: corev1.TaintEffectNoSchedule}, {Key: holdSecond, Effect: corev1.TaintEffectNoSchedule}}
	})
}

// placement is where the pods of openingPlacement were planned and where "free" went.
type placement struct {
	planned map[string]string // pod → Node its last Nominated event named
	landed  string            // the Node "free" was bound to
	hinted  bool              // whether Lathe set a nominatedNodeName on any pod meanwhile
}

// openingPlacement makes the plan name, for the pod "free", the node the kube-scheduler would not pick.
// Four pods in one pass on c5.large nodes: "big" (1200m) and "small" (500m) need a node each (hostname
// anti-affinity), "filler" (1 cpu) fits only next to small, so "free" (500m) is planned next to big, on
// node A, and small's node B is full with filler. Both Nodes fit free on their own. The Node B is made
// schedulable first, and only for free (free tolerates the second startup taint, the others don't), while
// small and filler are still pending: the kube-scheduler binds free to B unless it knows that small and
// filler are headed there (their nominatedNodeName holds B's room for them), in which case free waits for
// A. Then small and filler are let onto B and finally A opens.
func openingPlacement(t testing.TB, ns, pool string, hints bool) placement {
	t.Helper()
	ctx := context.Background()
	stop := make(chan struct{})
	watch := nominatedByLathe(ns, stop)
	free := barePod(ns, "free", "500m", pool)
	free.Spec.Tolerations = []corev1.Toleration{{Key: holdSecond, Operator: corev1.TolerationOpExists}}
	for _, p := range []*corev1.Pod{antiPod(ns, "big", "1200m", pool, "solo"), antiPod(ns, "small", "500m", pool, "solo"),
		barePod(ns, "filler", "1", pool), free} {
		if err := s.kubeClient.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"big", "small", "filler", "free"}
	out := placement{planned: map[string]string{}}
	eventually(t, 3*time.Minute, "every pod planned onto a registered Node", func(ctx context.Context) (bool, error) {
		for _, name := range names {
			node := plannedNode(t, ns, name)
			if node == "" || !registered(ctx, node) {
				return false, nil
			}
			out.planned[name] = node
		}
		return true, nil
	})
	a, b := out.planned["big"], out.planned["small"]
	if a == b || out.planned["free"] != a || out.planned["filler"] != b {
		t.Fatalf("plan %v: want free next to big and filler next to small on another node", out.planned)
	}
	if hints {
		hintsHold(t, ns, b, "small", "filler")
	}
	untaint(t, b, holdFirst)
	// The kube-scheduler tries free as soon as B opens for it: it is bound (to B), or found B full.
	freePod := &corev1.Pod{}
	eventually(t, time.Minute, "free to be bound or found B full", func(ctx context.Context) (bool, error) {
		if err := s.kubeClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "free"}, freePod); err != nil {
			return false, err
		}
		return freePod.Spec.NodeName != "" || strings.Contains(scheduledMessage(freePod), "Insufficient cpu"), nil
	})
	if freePod.Spec.NodeName == "" {
		untaint(t, b, holdSecond)
		eventually(t, time.Minute, "small and filler bound", func(ctx context.Context) (bool, error) {
			for _, name := range []string{"small", "filler"} {
				p := &corev1.Pod{}
				if err := s.kubeClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil || p.Spec.NodeName == "" {
					return false, err
				}
			}
			return true, nil
		})
		untaint(t, a, holdFirst, holdSecond)
		eventually(t, 2*time.Minute, "free to be bound", func(ctx context.Context) (bool, error) {
			err := s.kubeClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "free"}, freePod)
			return err == nil && freePod.Spec.NodeName != "", err
		})
	}
	close(stop)
	out.landed, out.hinted = freePod.Spec.NodeName, <-watch
	return out
}

// registered reports whether the Node exists and Lathe has registered it.
func registered(ctx context.Context, name string) bool {
	node := &corev1.Node{}
	return s.kubeClient.Get(ctx, client.ObjectKey{Name: name}, node) == nil && node.Labels[v1.NodeRegisteredLabelKey] == "true"
}

// scheduledMessage is the message of the pod's PodScheduled condition.
func scheduledMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Message
		}
	}
	return ""
}

// untaint removes the taints with these keys from the Node.
func untaint(t testing.TB, name string, keys ...string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := &corev1.Node{}
		if err := s.kubeClient.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(taint corev1.Taint) bool { return slices.Contains(keys, taint.Key) })
		return s.kubeClient.Update(context.Background(), node)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Two Nodes fit the pod "free", and Lathe's plan names A, not B, which becomes schedulable first: the pod
