package e2e_test

import (
	"context"
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

// plannedPlacement creates two pods that need a node each and a small pod that fits next to either, and
// returns the small pod's Node and the Node Lathe's plan named for it, once all three run; and whether
// Lathe set a nominatedNodeName on any of them meanwhile.
func plannedPlacement(t *testing.T, ns, pool string) (landed, planned string, hinted bool) {
	t.Helper()
	ctx := context.Background()
	stop := make(chan struct{})
	watch := nominatedByLathe(ns, stop)
	for _, p := range []*corev1.Pod{antiPod(ns, "big", "3", pool, "solo"), antiPod(ns, "small", "500m", pool, "solo"), barePod(ns, "free", "500m", pool)} {
		if err := s.kubeClient.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	var pods corev1.PodList
	eventually(t, 3*time.Minute, "three running pods", func(ctx context.Context) (bool, error) {
		if err := s.kubeClient.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 3, nil
	})
	close(stop)
	for _, p := range pods.Items {
		if p.Name == "free" {
			landed = p.Spec.NodeName
		}
	}
	return landed, plannedNode(t, ns, "free"), <-watch
}

// Two nodes fit the small pod; Lathe's plan names one of them (the fuller one, which the kube-scheduler's
// least-allocated scoring would not pick): the pod lands there, because Lathe tells the kube-scheduler.
func TestPodLandsOnItsPlannedNode(t *testing.T) {
	ns := namespace(t, "planned-node")
	tutorialPool(t, "planned", func(*v1.NodePool) {})
	landed, planned, hinted := plannedPlacement(t, ns, "planned")
	if planned == "" || landed != planned {
		t.Fatalf("pod landed on %q, plan named %q", landed, planned)
	}
	if !hinted {
		t.Errorf("no pod had a nominatedNodeName set by %s", provisioning.NominationFieldManager)
	}
}

// With NOMINATED_NODE_NAME=false Lathe leaves status.nominatedNodeName alone, as before.
func TestNominatedNodeNameOff(t *testing.T) {
	ns := namespace(t, "nominate-off")
	tutorialPool(t, "nominate-off", func(*v1.NodePool) {})
	restartLatheWith(t, "NOMINATED_NODE_NAME=false")
	landed, _, hinted := plannedPlacement(t, ns, "nominate-off")
	if landed == "" || hinted {
		t.Fatalf("with the setting off: pod on %q, nominatedNodeName set by lathe: %v", landed, hinted)
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
