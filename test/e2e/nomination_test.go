package e2e_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
)

// antiPod is a pause pod of the pool that wants a host without another pod of the group.
func antiPod(ns, name, cpu, pool, group string) *corev1.Pod {
	p := barePod(ns, name, cpu, pool)
	p.Labels = map[string]string{"group": group}
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels},
	}}}}
	return p
}

// plannedNode returns the Node the pod's latest Nominated event named (directly, or through its NodeClaim).
func plannedNode(t *testing.T, ns, pod string) string {
	t.Helper()
	ctx := context.Background()
	var events corev1.EventList
	if err := s.kubeClient.List(ctx, &events, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": pod}); err != nil {
		t.Fatal(err)
	}
	var kind, name string
	var at time.Time
	for _, e := range events.Items {
		m := nominatedTarget.FindStringSubmatch(e.Message)
		if e.Reason == "Nominated" && m != nil && !e.LastTimestamp.Time.Before(at) {
			kind, name, at = m[1], m[2], e.LastTimestamp.Time
		}
	}
	if kind != "nodeclaim" {
		return name
	}
	claim := &v1.NodeClaim{}
	if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: name}, claim); err != nil {
		t.Fatal(err)
	}
	return claim.Status.NodeName
}

// nominatedByLathe watches the namespace's pending pods until stop closes and reports whether any of them
// had a status.nominatedNodeName Lathe set.
func nominatedByLathe(ns string, stop <-chan struct{}) <-chan bool {
	out := make(chan bool, 1)
	go func() {
		seen := false
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				out <- seen
				return
			case <-tick.C:
			}
			var pods corev1.PodList
			if err := s.kubeClient.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
				continue
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.Status.NominatedNodeName != "" && provisioning.NominatedNodeNameOwner(p) == provisioning.NominationFieldManager {
					seen = true
				}
			}
		}
	}()
	return out
}

// Startup taints of the plan pool that the test takes off itself, so that the kube-scheduler sees the two
// Nodes become schedulable one after the other, as on a cluster whose instances boot at different speeds.
const (
	holdFirst  = "lathe-e2e/first"
	holdSecond = "lathe-e2e/second"
)

// planPool is the tutorial pool on c5.large only (1930m allocatable cpu), so that the plan is unique, with
// the two startup taints.
func planPool(t *testing.T, name string) {
	tutorialPool(t, name, func(pool *v1.NodePool) {
		pool.Spec.Template.Spec.Requirements = append(pool.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
			Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.large"}})
		pool.Spec.Template.Spec.StartupTaints = []corev1.Taint{
			{Key: holdFirst, Effect: corev1.TaintEffectNoSchedule}, {Key: holdSecond, Effect: corev1.TaintEffectNoSchedule}}
	})
}

// placement is where the pods of plannedPlacement were planned and where "free" went.
type placement struct {
	planned map[string]string // pod → Node its last Nominated event named
	landed  string            // the Node "free" was bound to
	hinted  bool              // whether Lathe set a nominatedNodeName on any pod meanwhile
}

// plannedPlacement makes the plan name, for the pod "free", the node the kube-scheduler would not pick.
// Four pods in one pass on c5.large nodes: "big" (1200m) and "small" (500m) need a node each (hostname
// anti-affinity), "filler" (1 cpu) fits only next to small, so "free" (500m) is planned next to big, on
// node A, and small's node B is full with filler. Both Nodes fit free on their own. The Node B is made
// schedulable first, and only for free (free tolerates the second startup taint, the others don't), while
// small and filler are still pending: the kube-scheduler binds free to B unless it knows that small and
// filler are headed there (their nominatedNodeName holds B's room for them), in which case free waits for
// A. Then small and filler are let onto B and finally A opens.
func plannedPlacement(t *testing.T, ns, pool string, hints bool) placement {
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
		// A scheduling attempt already under way when Lathe writes a hint clears it when it fails, and Lathe
		// writes it again: wait until the hints have held for a few polls in a row.
		held := 0
		eventually(t, time.Minute, "the pods planned onto B to keep Lathe's nominatedNodeName", func(ctx context.Context) (bool, error) {
			for _, name := range []string{"small", "filler"} {
				p := &corev1.Pod{}
				if err := s.kubeClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
					return false, err
				}
				if p.Status.NominatedNodeName != b || provisioning.NominatedNodeNameOwner(p) != provisioning.NominationFieldManager {
					held = 0
					return false, nil
				}
			}
			held++
			return held >= 8, nil
		})
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
func untaint(t *testing.T, name string, keys ...string) {
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
// waits for A, because Lathe told the kube-scheduler where the other pending pods are headed.
func TestPodLandsOnItsPlannedNode(t *testing.T) {
	ns := namespace(t, "planned-node")
	planPool(t, "planned")
	got := plannedPlacement(t, ns, "planned", true)
	if got.landed != got.planned["free"] {
		t.Fatalf("free landed on %q, plan named %q (plan %v)", got.landed, got.planned["free"], got.planned)
	}
	if !got.hinted {
		t.Errorf("no pod had a nominatedNodeName set by %s", provisioning.NominationFieldManager)
	}
}

// With NOMINATED_NODE_NAME=false Lathe leaves status.nominatedNodeName alone, as before, and the
// kube-scheduler binds free to the first Node with room, not the planned one.
func TestNominatedNodeNameOff(t *testing.T) {
	ns := namespace(t, "nominate-off")
	planPool(t, "nominate-off")
	restartLatheWith(t, "NOMINATED_NODE_NAME=false")
	got := plannedPlacement(t, ns, "nominate-off", false)
	if got.hinted {
		t.Errorf("nominatedNodeName set by %s with the setting off", provisioning.NominationFieldManager)
	}
	if got.landed == "" || got.landed == got.planned["free"] {
		t.Errorf("with the setting off free landed on %q, want the unplanned node %q", got.landed, got.planned["small"])
	}
}

// restartLatheWith restarts lathe with extra environment, and restarts it as configured for the suite when
// the test ends.
func restartLatheWith(t *testing.T, env ...string) {
	t.Helper()
	if err := s.lathe.Stop(); err != nil {
		t.Fatal(err)
	}
	var err error
	s.lathe, err = startLatheEnv(context.Background(), env...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.lathe.Stop()
		restartLathe(t)
	})
}

// A pod the kube-scheduler nominated for preemption keeps that nomination: Lathe neither provisions for it
// nor writes its nominatedNodeName.
func TestPreemptionNominationIsKept(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "preemption")
	tutorialPool(t, "preempt", func(pool *v1.NodePool) {
		pool.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("2")}
	})
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "lathe-e2e-high"}, Value: 1000}
	if err := s.kubeClient.Create(ctx, high); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.kubeClient.Delete(context.Background(), high) })
	if err := s.kubeClient.Create(ctx, barePod(ns, "low", "1200m", "preempt")); err != nil {
		t.Fatal(err)
	}
	low := &corev1.Pod{}
	eventually(t, 3*time.Minute, "the low-priority pod to run", func(ctx context.Context) (bool, error) {
		err := s.kubeClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "low"}, low)
		return err == nil && low.Status.Phase == corev1.PodRunning, err
	})
	preemptor := barePod(ns, "high", "1200m", "preempt")
	preemptor.Spec.PriorityClassName = high.Name
	if err := s.kubeClient.Create(ctx, preemptor); err != nil {
		t.Fatal(err)
	}
	nominated := false
	eventually(t, 2*time.Minute, "the preemptor to run", func(ctx context.Context) (bool, error) {
		p := &corev1.Pod{}
		if err := s.kubeClient.Get(ctx, client.ObjectKeyFromObject(preemptor), p); err != nil {
			return false, err
		}
		if p.Status.NominatedNodeName != "" {
			nominated = true
			if owner := provisioning.NominatedNodeNameOwner(p); owner == provisioning.NominationFieldManager || p.Status.NominatedNodeName != low.Spec.NodeName {
				t.Fatalf("preemptor nominated to %s by %s, want %s by the kube-scheduler", p.Status.NominatedNodeName, owner, low.Spec.NodeName)
			}
		}
		return p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning, nil
	})
	got := &corev1.Pod{}
	if err := s.kubeClient.Get(ctx, client.ObjectKeyFromObject(preemptor), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != low.Spec.NodeName {
		t.Errorf("preemptor runs on %s, want the preempted node %s", got.Spec.NodeName, low.Spec.NodeName)
	}
	if !nominated {
		t.Log("the preemptor was bound before a nominatedNodeName was observed")
	}
}
