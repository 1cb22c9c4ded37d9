package e2e_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// generationLabel is a template label the tests change to drift a pool's nodes.
const generationLabel = "lathe.test/generation"

// ownPool creates a copy of the tutorial pool whose nodes also carry generationLabel "1", and lets mutate
// set its disruption settings.
func ownPool(t *testing.T, name string, mutate func(*v1.NodePool)) {
	t.Helper()
	tutorialPool(t, name, func(pool *v1.NodePool) {
		pool.Spec.Template.Labels[generationLabel] = "1"
		mutate(pool)
	})
}

// setGeneration changes the pool's template label generationLabel, which changes its template hash.
func setGeneration(t *testing.T, name, generation string) {
	t.Helper()
	ctx := context.Background()
	pool := &v1.NodePool{}
	if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: name}, pool); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(pool.DeepCopy())
	pool.Spec.Template.Labels[generationLabel] = generation
	if err := s.kubeClient.Patch(ctx, pool, patch); err != nil {
		t.Fatal(err)
	}
}

// waitForNodeEvent waits for an event about the node with the reason whose message contains every part.
func waitForNodeEvent(t *testing.T, timeout time.Duration, node, reason string, parts ...string) corev1.Event {
	t.Helper()
	var found corev1.Event
	eventually(t, timeout, reason+" event on node "+node, func(ctx context.Context) (bool, error) {
		evs, err := events(ctx, "", "Node", node, reason)
		if err != nil {
			return false, err
		}
		for _, e := range evs {
			if containsAll(e.Message, parts) {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func hasDisruptedTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, v1.IsDisruptedTaint)
}

// disruptingNow counts the pool's nodes being disrupted (tainted karpenter.sh/disrupted, or their NodeClaim
// being deleted), and the pool's nodes.
func disruptingNow(ctx context.Context, pool string) (disrupting, nodes int, err error) {
	var claims v1.NodeClaimList
	if err := s.kubeClient.List(ctx, &claims, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		return 0, 0, err
	}
	list, err := poolNodes(ctx, pool)
	if err != nil {
		return 0, 0, err
	}
	counted := map[string]bool{}
	for _, c := range claims.Items {
		if c.DeletionTimestamp != nil && c.Status.NodeName != "" {
			counted[c.Status.NodeName] = true
		}
	}
	for i := range list {
		if hasDisruptedTaint(&list[i]) {
			counted[list[i].Name] = true
		}
	}
	return len(counted), len(list), nil
}

// TestDriftReplacesEveryNodeWithinBudget changes the template labels of a five-node pool whose budget lets
// 20 % of its nodes be disrupted for drift: every node is replaced by one carrying the new label, and a
// watcher checks that no more than ceil(20 % × the pool's nodes) are disrupted at once.
func TestDriftReplacesEveryNodeWithinBudget(t *testing.T) {
	const pool = "drift-budget"
	ns := namespace(t, "drift-budget")
	ownPool(t, pool, func(p *v1.NodePool) {
		p.Spec.Disruption = v1.Disruption{
			ConsolidateAfter:    v1.MustParseNillableDuration("10m"),
			ConsolidationPolicy: v1.ConsolidationPolicyWhenEmpty,
			Budgets:             []v1.Budget{{Nodes: "20%", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}}},
		}
	})
	// One replica per node: each pod keeps away from the others' hostnames.
	deployment(t, ns, "spread", 5, "500m", func(p *corev1.PodSpec) {
		onPool(pool)(p)
		p.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey:   corev1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
			}},
		}}
	})
	runningPods(t, ns, "spread", 5, 2*time.Minute)
	ctx := context.Background()
	original, err := poolNodes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(original) != 5 {
		t.Fatalf("want 5 nodes in the pool, got %d", len(original))
	}

	var mu sync.Mutex
	var violations []string
	most := 0
	watchCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(watchCtx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			disrupting, nodes, err := disruptingNow(ctx, pool)
			if err != nil {
				return false, nil
			}
			allowed := int(math.Ceil(0.2 * float64(nodes)))
			mu.Lock()
			most = max(most, disrupting)
			if disrupting > allowed {
				violations = append(violations, fmt.Sprintf("%s: %d of %d nodes disrupting, budget %d",
					time.Now().Format(time.StampMilli), disrupting, nodes, allowed))
			}
			mu.Unlock()
			return false, nil
		})
	}()
	start := time.Now()
	setGeneration(t, pool, "2")
	eventually(t, 4*time.Minute, "every original node to be replaced by one with the new label", func(ctx context.Context) (bool, error) {
		nodes, err := poolNodes(ctx, pool)
		if err != nil {
			return false, err
		}
		for _, n := range nodes {
			if n.Labels[generationLabel] != "2" {
				return false, nil
			}
		}
		return len(nodes) == 5, nil
	})
	runningPods(t, ns, "spread", 5, time.Minute)
	stop()
	<-done
	t.Logf("5 drifted nodes replaced in %s; at most %d disrupting at once", time.Since(start).Round(time.Second), most)
	for _, v := range violations {
		t.Errorf("budget exceeded at %s", v)
	}
	after, _ := poolNodes(ctx, pool)
	for _, o := range original {
		for _, n := range after {
			if n.Name == o.Name {
				t.Errorf("original node %s is still in the pool", o.Name)
			}
		}
	}
}

// TestDoNotDisruptPodKeepsItsNode puts a do-not-disrupt pod on a node that, once a bigger pod leaves it
// and the template changes, is both underutilized and drifted: the node stays through several disruption
// passes and gets a DisruptionBlocked event naming the pod.
func TestDoNotDisruptPodKeepsItsNode(t *testing.T) {
	const pool = "do-not-disrupt"
	ns := namespace(t, "do-not-disrupt")
	ownPool(t, pool, func(p *v1.NodePool) {
		p.Spec.Disruption = v1.Disruption{
			ConsolidateAfter:    v1.MustParseNillableDuration("5s"),
			ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
			Budgets:             []v1.Budget{{Nodes: "100%"}},
		}
	})
	ctx := context.Background()
	guarded := barePod(ns, "guarded", "100m", pool)
	guarded.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	big := barePod(ns, "big", "3", pool)
	for _, p := range []*corev1.Pod{guarded, big} {
		if err := s.kubeClient.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	var node string
	eventually(t, 2*time.Minute, "the guarded pod to run", func(ctx context.Context) (bool, error) {
		if err := s.kubeClient.Get(ctx, client.ObjectKeyFromObject(guarded), guarded); err != nil {
			return false, err
		}
		node = guarded.Spec.NodeName
		return guarded.Status.Phase == corev1.PodRunning, nil
	})
	if err := s.kubeClient.Delete(ctx, big, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	setGeneration(t, pool, "2")
	claim := claimOf(t, pool, node)
	eventually(t, time.Minute, "the guarded node's claim to be drifted and consolidatable", func(ctx context.Context) (bool, error) {
		if err := s.kubeClient.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(claim.Status.Conditions, v1.ConditionTypeDrifted) &&
			meta.IsStatusConditionTrue(claim.Status.Conditions, v1.ConditionTypeConsolidatable), nil
	})
	e := waitForNodeEvent(t, time.Minute, node, "DisruptionBlocked", ns+"/guarded", v1.DoNotDisruptAnnotationKey)
	t.Logf("event on %s: %s", node, e.Message)
	// Two consolidation polls and a validation delay later the node and its claim are still there.
	observe := 30 * time.Second
	if why := holds(observe, func(ctx context.Context) (string, error) {
		if err := s.kubeClient.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
			return goneOr(err, "the claim is gone")
		}
		n := &corev1.Node{}
		if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return goneOr(err, "the node is gone")
		}
		switch {
		case claim.DeletionTimestamp != nil:
			return "the claim is being deleted", nil
		case hasDisruptedTaint(n):
			return "the node is tainted " + v1.DisruptedNoScheduleTaint.Key, nil
		}
		return "", nil
	}); why != "" {
		t.Fatalf("the guarded node %s was disrupted: %s", node, why)
	}
	if err := s.kubeClient.Get(ctx, client.ObjectKeyFromObject(guarded), guarded); err != nil || guarded.DeletionTimestamp != nil || guarded.Spec.NodeName != node {
		t.Fatalf("the guarded pod left node %s (%v)", node, err)
	}
	// Without the annotation the same node is disrupted: it was only the annotation that kept it.
	patch := client.MergeFrom(guarded.DeepCopy())
	delete(guarded.Annotations, v1.DoNotDisruptAnnotationKey)
	if err := s.kubeClient.Patch(ctx, guarded, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the node to be disrupted once the annotation is removed", func(ctx context.Context) (bool, error) {
		if err := s.kubeClient.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}
		return claim.DeletionTimestamp != nil, nil
	})
}

// TestPDBBlocksDrainUntilTerminationGracePeriod deletes the NodeClaim of a node whose only pod a
// PodDisruptionBudget with maxUnavailable 0 protects: the pod stays while the budget blocks the drain, the
// node is gone once the pool's 30 s terminationGracePeriod has passed, and the node's DisruptionBlocked event
// names the budget.
func TestPDBBlocksDrainUntilTerminationGracePeriod(t *testing.T) {
	const pool = "pdb-tgp"
	ns := namespace(t, "pdb-tgp")
	ownPool(t, pool, func(p *v1.NodePool) {
		p.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 30 * time.Second}
		p.Spec.Disruption = v1.Disruption{
			ConsolidateAfter:    v1.MustParseNillableDuration("5s"),
			ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
			Budgets:             []v1.Budget{{Nodes: "100%"}},
		}
	})
	ctx := context.Background()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &intstr.IntOrString{IntVal: 0},
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "held"}},
		},
	}
	if err := s.kubeClient.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	deployment(t, ns, "held", 1, "1", onPool(pool))
	pod := runningPods(t, ns, "held", 1, 2*time.Minute)[0]
	node := pod.Spec.NodeName
	e := waitForNodeEvent(t, time.Minute, node, "DisruptionBlocked", "prevents pod evictions", ns+"/held")
	t.Logf("event on %s: %s", node, e.Message)

	claim := claimOf(t, pool, node)
	if err := s.kubeClient.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	// The grace period runs from the claim's deletion timestamp.
	if err := s.kubeClient.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil || claim.DeletionTimestamp == nil {
		t.Fatalf("reading the deleted claim's deletion timestamp (%v)", err)
	}
	deleted := claim.DeletionTimestamp.Time
	// Well inside the grace period the budget still holds the pod on its node.
	if why := holds(20*time.Second, func(ctx context.Context) (string, error) {
		p := &corev1.Pod{}
		if err := s.kubeClient.Get(ctx, client.ObjectKeyFromObject(&pod), p); err != nil {
			return goneOr(err, "the pod is gone")
		}
		if p.DeletionTimestamp != nil {
			return "the pod is being deleted", nil
		}
		return "", nil
	}); why != "" {
		t.Fatalf("the PDB-protected pod was removed %s after its node's claim was deleted: %s", time.Since(deleted).Round(time.Second), why)
	}
	waitForNodeEvent(t, 10*time.Second, node, "FailedDraining")
	eventually(t, time.Minute, "the node to be gone after the terminationGracePeriod", func(ctx context.Context) (bool, error) {
		err := s.kubeClient.Get(ctx, client.ObjectKey{Name: node}, &corev1.Node{})
		return client.IgnoreNotFound(err) == nil && err != nil, client.IgnoreNotFound(err)
	})
	gone := time.Since(deleted)
	t.Logf("node %s gone %s after its claim was deleted", node, gone.Round(time.Second))
	if gone < 30*time.Second {
		t.Errorf("node went after %s, before the 30 s terminationGracePeriod", gone)
	}
	// At the deadline the pod was deleted past its PDB, and told so.
	eventually(t, 10*time.Second, "a Disrupted event on the held pod", func(ctx context.Context) (bool, error) {
		evs, err := events(ctx, ns, "Pod", pod.Name, "Disrupted")
		return len(evs) > 0, err
	})
}

// holds checks every 250 ms for d that nothing is violated, and returns the first violation seen ("" when
// none). Errors reading the cluster are retried.
func holds(d time.Duration, violated func(ctx context.Context) (string, error)) string {
	var why string
	_ = wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, d, true, func(ctx context.Context) (bool, error) {
		w, err := violated(ctx)
		if err != nil {
			return false, nil
		}
		why = w
		return why != "", nil
	})
	return why
}

// goneOr turns NotFound into the violation gone, and passes other errors on.
func goneOr(err error, gone string) (string, error) {
	if apierrors.IsNotFound(err) {
		return gone, nil
	}
	return "", err
}

// barePod is a pause pod without an owner on the pool.
func barePod(ns, name, cpu, pool string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(0)),
			Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
		},
	}
	onPool(pool)(&p.Spec)
	return p
}

// claimOf returns the pool's NodeClaim of the node.
func claimOf(t *testing.T, pool, node string) *v1.NodeClaim {
	t.Helper()
	var claims v1.NodeClaimList
	if err := s.kubeClient.List(context.Background(), &claims, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		t.Fatal(err)
	}
	for i := range claims.Items {
		if claims.Items[i].Status.NodeName == node {
			return &claims.Items[i]
		}
	}
	t.Fatalf("no nodeclaim for node %s", node)
	return nil
}
