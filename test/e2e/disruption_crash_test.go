package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
)

// The garbage collector runs when lathe starts and then every 2 minutes. The tests below restart lathe once
// the leak is in place, so that they wait for the collection at start rather than up to an interval
// plus the 30 s an unclaimed instance must be old (the interval itself is covered by the controller's
// integration tests).

// orphanMinAge is the age the garbage collector requires of an instance no NodeClaim refers to.
const orphanMinAge = 30 * time.Second

// steadyPool creates a copy of the tutorial pool that never consolidates.
func steadyPool(t *testing.T, name string) {
	t.Helper()
	tutorialPool(t, name, func(pool *v1.NodePool) {
		pool.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	})
}

// gone reports whether the object no longer exists.
func gone(ctx context.Context, key client.ObjectKey, obj client.Object) (bool, error) {
	err := s.kubeClient.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// TestGarbageCollectsInstanceWithoutNodeClaim launches an instance through the simulated provider behind
// lathe's back, as a launch whose NodeClaim was lost would leave it: the garbage collector terminates it.
func TestGarbageCollectsInstanceWithoutNodeClaim(t *testing.T) {
	namespace(t, "gc-orphan")
	ctx := context.Background()
	tutorial := &v1.NodePool{}
	if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: "default"}, tutorial); err != nil {
		t.Fatal(err)
	}
	leaked := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "gc-orphan-instance"},
		Spec: v1.NodeClaimSpec{
			// No node class: the simulated provider launches from its catalog as it is.
			Requirements: tutorial.Spec.Template.Spec.Requirements,
		},
	}
	launched, err := newSimCloud(t).Create(ctx, leaked)
	if err != nil {
		t.Fatalf("launching an instance behind lathe's back: %v", err)
	}
	node := &corev1.Node{}
	if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: leaked.Name}, node); err != nil {
		t.Fatalf("the leaked instance has no node: %v", err)
	}
	t.Logf("leaked instance %s", launched.Status.ProviderID)
	eventually(t, time.Minute, "the leaked instance to be older than the orphan age", func(context.Context) (bool, error) {
		return time.Since(node.CreationTimestamp.Time) > orphanMinAge+time.Second, nil
	})
	if ok, err := gone(ctx, client.ObjectKey{Name: leaked.Name}, &corev1.Node{}); err != nil || ok {
		t.Fatalf("the leaked instance went before lathe restarted (gone %v, %v)", ok, err)
	}
	killLathe(t)
	restartLathe(t)
	restarted := time.Now()
	eventually(t, time.Minute, "the leaked instance to be terminated", func(ctx context.Context) (bool, error) {
		return gone(ctx, client.ObjectKey{Name: leaked.Name}, &corev1.Node{})
	})
	t.Logf("leaked instance terminated %s after lathe started", time.Since(restarted).Round(time.Second))
	_, orphans, err := instancesPerClaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if orphans != 0 {
		t.Errorf("%d instances belong to no nodeclaim after the collection", orphans)
	}
}

// TestGarbageCollectsNodeClaimWhoseInstanceIsGone terminates a running node's instance behind lathe's back
// (the simulated provider no longer lists it, its Node stays as a dead node's would): the garbage collector
// deletes the NodeClaim, and the pod it held runs on a new node.
func TestGarbageCollectsNodeClaimWhoseInstanceIsGone(t *testing.T) {
	ns := namespace(t, "gc-lost")
	steadyPool(t, "gc-lost")
	deployment(t, ns, "web", 1, "1", onPool("gc-lost"))
	runningPods(t, ns, "web", 1, 2*time.Minute)
	ctx := context.Background()
	var claims v1.NodeClaimList
	if err := s.kubeClient.List(ctx, &claims, client.MatchingLabels{v1.NodePoolLabelKey: "gc-lost"}); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 1 || claims.Items[0].Status.NodeName == "" {
		t.Fatalf("want one registered nodeclaim in the pool, have %d", len(claims.Items))
	}
	lost := claims.Items[0]
	node := &corev1.Node{}
	if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: lost.Status.NodeName}, node); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Annotations[sim.TerminatedAnnotationKey] = "true"
	if err := s.kubeClient.Patch(ctx, node, patch); err != nil {
		t.Fatalf("terminating the instance behind lathe's back: %v", err)
	}
	if ok, err := gone(ctx, client.ObjectKey{Name: lost.Name}, &v1.NodeClaim{}); err != nil || ok {
		t.Fatalf("the nodeclaim went before lathe restarted (gone %v, %v)", ok, err)
	}
	killLathe(t)
	restartLathe(t)
	eventually(t, time.Minute, "the nodeclaim whose instance is gone to be removed", func(ctx context.Context) (bool, error) {
		return gone(ctx, client.ObjectKey{Name: lost.Name}, &v1.NodeClaim{})
	})
	eventually(t, 2*time.Minute, "the pod to run on another node", func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := s.kubeClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": "web"}); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Spec.NodeName != lost.Status.NodeName {
				return true, nil
			}
		}
		return false, nil
	})
}

// disruptedWithoutCommand returns the nodes that carry the disrupted taint while their NodeClaim is not
// being deleted.
func disruptedWithoutCommand(ctx context.Context) ([]string, error) {
	var nodes corev1.NodeList
	if err := s.kubeClient.List(ctx, &nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
		return nil, err
	}
	var claims v1.NodeClaimList
	if err := s.kubeClient.List(ctx, &claims); err != nil {
		return nil, err
	}
	deleting := map[string]bool{}
	for _, c := range claims.Items {
		if c.DeletionTimestamp != nil {
			deleting[c.Status.NodeName] = true
		}
	}
	var out []string
	for _, n := range nodes.Items {
		if hasDisruptedTaint(&n) && !deleting[n.Name] && n.DeletionTimestamp == nil {
			out = append(out, n.Name)
		}
	}
	return out, nil
}

// poolClaimNames returns the names of the pool's NodeClaims.
func poolClaimNames(ctx context.Context, pool string) (map[string]bool, error) {
	var claims v1.NodeClaimList
	if err := s.kubeClient.List(ctx, &claims, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, c := range claims.Items {
		names[c.Name] = true
	}
	return names, nil
}

// killWhenActing polls every 50 ms until a node is tainted disrupted while its NodeClaim is not yet deleted
// (a command in flight) or the pool has a NodeClaim not in known (a replacement), then kills and restarts
// lathe. It returns what it saw, or "" if nothing happened
// within timeout.
func killWhenActing(t *testing.T, pool string, known map[string]bool, timeout time.Duration) string {
	t.Helper()
	var seen string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if tainted, err := disruptedWithoutCommand(ctx); err != nil || len(tainted) > 0 {
			seen = fmt.Sprintf("nodes %v were tainted disrupted", tainted)
			return len(tainted) > 0, err
		}
		now, err := poolClaimNames(ctx, pool)
		for name := range now {
			if !known[name] {
				seen = "replacement nodeclaim " + name + " created"
				return true, nil
			}
		}
		return false, err
	})
	if err != nil {
		return ""
	}
	killLathe(t)
	restartLathe(t)
	return seen
}

// TestKilledWhileConsolidating kills lathe with SIGKILL while it replaces an underutilized node: before it
// acts, as soon as it taints the candidate or launches the replacement, and again at its next action after
// the restart.
// Afterwards no node may keep the disrupted taint without its NodeClaim being deleted, every NodeClaim must
// have exactly one instance and every instance a NodeClaim, and every replica must run.
func TestKilledWhileConsolidating(t *testing.T) {
	ns := namespace(t, "crash-consolidate")
	shrinkPool(t, "crash-consolidate")
	// Three 1-CPU replicas fit one node; with one left, a smaller node is cheaper: a replacement.
	deployment(t, ns, "inflate", 3, "1", onPool("crash-consolidate"))
	runningPods(t, ns, "inflate", 3, 2*time.Minute)
	ctx := context.Background()
	before, err := poolClaimNames(ctx, "crash-consolidate")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d nodeclaims before scaling down", len(before))
	scale(t, ns, "inflate", 1)
	killLathe(t) // before consolidation acts: the node is not yet consolidatable
	restartLathe(t)
	first := killWhenActing(t, "crash-consolidate", before, 90*time.Second)
	if first == "" {
		t.Fatal("lathe did not start consolidating the pool within 90s")
	}
	t.Logf("killed lathe once %s", first)
	seen, err := poolClaimNames(ctx, "crash-consolidate")
	if err != nil {
		t.Fatal(err)
	}
	for name := range before {
		seen[name] = true
	}
	// The restarted lathe first removes the taint the killed one left; the next kill waits for a new action.
	eventually(t, time.Minute, "the taint left by the killed lathe to be removed", func(ctx context.Context) (bool, error) {
		tainted, err := disruptedWithoutCommand(ctx)
		return len(tainted) == 0, err
	})
	if second := killWhenActing(t, "crash-consolidate", seen, 45*time.Second); second != "" {
		t.Logf("killed lathe again once %s", second)
	} else {
		t.Log("lathe took no further consolidation action within 45s of the restart")
	}

	eventually(t, time.Minute, "no node tainted disrupted without its nodeclaim being deleted", func(ctx context.Context) (bool, error) {
		tainted, err := disruptedWithoutCommand(ctx)
		return len(tainted) == 0, err
	})
	runningPods(t, ns, "inflate", 1, time.Minute)
	exactlyOneInstanceEach(t)
}
