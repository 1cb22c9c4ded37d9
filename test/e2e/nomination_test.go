package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
func plannedNode(t testing.TB, ns, pod string) string {
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

// steerings numbers the runs of steeredPlacement.
var steerings int

// Startup taint of the pools of steeredPlacement, which the test takes off each Node itself, so that the
// Nodes become schedulable in the order it chooses.
const openTaint = "lathe-e2e/open"

// steeredPlacement returns where the pod "free" was planned and where it landed, in a scenario where two
// Nodes fit it, the plan names the fuller one, and the kube-scheduler's own scoring (least allocated) prefers
// the other. On c5.large Nodes (1930m allocatable): "big" (1200m) must run in zone a and "small" (200m) in
// zone b, and "free" (500m, lower priority) needs big to be running somewhere in the cluster (pod affinity
// over kubernetes.io/os, which all Nodes share). The plan packs free next to big, on A. B opens first:
// small is bound there, while free can go nowhere until big runs. Then A opens: the kube-scheduler binds big
// first (higher priority) and then tries free, which both Nodes now fit; without a hint it picks B, the
// emptier; with Lathe's hint it tries A first. It also reports whether Lathe set a nominatedNodeName
// meanwhile.
func steeredPlacement(t *testing.T, name string, hints bool) (landed, planned string, hinted bool) {
	t.Helper()
	ctx := context.Background()
	// New names for every run (go test -count), so that an earlier run's Nominated events don't mislead.
	steerings++
	pool := fmt.Sprintf("%s-%d", name, steerings)
	ns := namespace(t, pool)
	low := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "lathe-e2e-low-" + pool}, Value: -10}
	if err := s.kubeClient.Create(ctx, low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.kubeClient.Delete(context.Background(), low) })
	tutorialPool(t, pool, func(p *v1.NodePool) {
		p.Spec.Template.Spec.Requirements = append(p.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.large"}},
			v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a", "us-east-1b"}})
		p.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: openTaint, Effect: corev1.TaintEffectNoSchedule}}
	})
	stop := make(chan struct{})
	watch := nominatedByLathe(ns, stop)
	big := barePod(ns, "big", "1200m", pool)
	big.Labels = map[string]string{"anchor": "yes"}
	big.Spec.NodeSelector[corev1.LabelTopologyZone] = "us-east-1a"
	small := barePod(ns, "small", "200m", pool)
	small.Spec.NodeSelector[corev1.LabelTopologyZone] = "us-east-1b"
	free := barePod(ns, "free", "500m", pool)
	free.Spec.PriorityClassName = low.Name
	free.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey: corev1.LabelOSStable, LabelSelector: &metav1.LabelSelector{MatchLabels: big.Labels},
	}}}}
	for _, p := range []*corev1.Pod{big, small, free} {
		if err := s.kubeClient.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	plan := map[string]string{}
	eventually(t, 3*time.Minute, "every pod planned onto a registered Node", func(ctx context.Context) (bool, error) {
		for _, name := range []string{"big", "small", "free"} {
			node := plannedNode(t, ns, name)
			if node == "" || !registered(ctx, node) {
				return false, nil
			}
			plan[name] = node
		}
		return true, nil
	})
	a, b := plan["big"], plan["small"]
	if a == b || plan["free"] != a {
		t.Fatalf("plan %v: want free next to big, and small on another Node", plan)
	}
	// A stays registered under its startup taint for longer than the nomination controller's grace for a
	// Node that just opened (rejectAfter, 2 s) before B opens and the kube-scheduler tries free again: that
	// attempt fails on A and clears the hint, and must not count as a rejection of the plan while A is not
	// initialized. On a loaded machine this happened by chance; here it happens every run.
	time.Sleep(3 * time.Second)
	untaint(t, b, openTaint)
	eventually(t, time.Minute, "small to be bound to B", func(ctx context.Context) (bool, error) {
		return boundTo(ctx, t, ns, "small") == b, nil
	})
	if hints {
		hintsHold(t, ns, a, "free")
	}
	untaint(t, a, openTaint)
	eventually(t, time.Minute, "free to be bound", func(ctx context.Context) (bool, error) {
		landed = boundTo(ctx, t, ns, "free")
		return landed != "", nil
	})
	close(stop)
	return landed, a, <-watch
}

// hintsHold waits until the pods' status.nominatedNodeName, set by Lathe, has named node for a few polls in
// a row: a scheduling attempt under way when Lathe writes a hint clears it when it fails, and Lathe writes
// it again.
func hintsHold(t testing.TB, ns, node string, pods ...string) {
	t.Helper()
	held := 0
	eventually(t, time.Minute, fmt.Sprintf("%v to keep Lathe's nominatedNodeName %s", pods, node), func(ctx context.Context) (bool, error) {
		for _, name := range pods {
			p := &corev1.Pod{}
			if err := s.kubeClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
				return false, err
			}
			if p.Status.NominatedNodeName != node || provisioning.NominatedNodeNameOwner(p) != provisioning.NominationFieldManager {
				held = 0
				return false, nil
			}
		}
		held++
		return held >= 8, nil
	})
}

// boundTo returns the Node the pod is bound to, empty while it is pending.
func boundTo(ctx context.Context, t *testing.T, ns, name string) string {
	t.Helper()
	p := &corev1.Pod{}
	if err := s.kubeClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p.Spec.NodeName
}

// Two nodes fit the pod; Lathe's plan names the fuller one, which the kube-scheduler's least-allocated
// scoring would not pick: the pod lands there, because Lathe tells the kube-scheduler.
func TestPodLandsOnItsPlannedNode(t *testing.T) {
	landed, planned, hinted := steeredPlacement(t, "planned", true)
	if landed != planned {
		t.Fatalf("pod landed on %q, plan named %q", landed, planned)
	}
	if !hinted {
		t.Errorf("no pod had a nominatedNodeName set by %s", provisioning.NominationFieldManager)
	}
}

// With NOMINATED_NODE_NAME=false Lathe leaves status.nominatedNodeName alone, as before, and the same pod
// goes where the kube-scheduler's scoring puts it: not on the planned Node.
func TestNominatedNodeNameOff(t *testing.T) {
	restartLatheWith(t, "NOMINATED_NODE_NAME=false")
	landed, planned, hinted := steeredPlacement(t, "nominate-off", false)
	if landed == "" || landed == planned || hinted {
		t.Fatalf("with the setting off: pod on %q (planned %q), nominatedNodeName set by lathe: %v", landed, planned, hinted)
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
