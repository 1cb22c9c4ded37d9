package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
)

// TestInflate is the getting-started tutorial: scale the inflate deployment from 0 to 5 and watch Lathe
// launch nodes the kube-scheduler fills with running pods.
func TestInflate(t *testing.T) {
	ns := namespace(t, "inflate")
	deployment(t, ns, "inflate", 5, "1", nil)
	pods := runningPods(t, ns, "inflate", 5, 2*time.Minute)
	claims := readyNodeClaims(t)
	byNode := map[string]v1.NodeClaim{}
	for _, c := range claims {
		byNode[c.Status.NodeName] = c
		if c.Labels[v1.NodePoolLabelKey] != "default" || c.Labels[v1.LabelInstanceType] == "" || c.Labels[v1.CapacityTypeLabelKey] != "on-demand" {
			t.Errorf("nodeclaim %s labels %v", c.Name, c.Labels)
		}
	}
	ctx := context.Background()
	for _, p := range pods {
		if _, ok := byNode[p.Spec.NodeName]; !ok {
			t.Errorf("pod %s runs on %s, which no NodeClaim launched", p.Name, p.Spec.NodeName)
		}
		nominated, err := events(ctx, ns, "Pod", p.Name, "Nominated")
		if err != nil {
			t.Fatal(err)
		}
		if len(nominated) == 0 || !strings.HasPrefix(nominated[0].Message, "Pod should schedule on: ") {
			t.Errorf("pod %s has no Nominated event (%v)", p.Name, nominated)
		}
	}
	for _, c := range claims {
		node := &corev1.Node{}
		if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: c.Status.NodeName}, node); err != nil {
			t.Fatal(err)
		}
		if node.Labels[v1.NodeRegisteredLabelKey] != "true" || node.Labels[v1.NodeInitializedLabelKey] != "true" {
			t.Errorf("node %s is not labelled registered and initialized: %v", node.Name, node.Labels)
		}
		for _, taint := range node.Spec.Taints {
			if taint.Key == v1.UnregisteredNoExecuteTaint.Key {
				t.Errorf("node %s still has the unregistered taint", node.Name)
			}
		}
	}
}

// TestUnschedulablePodIsExplained checks that a pod no NodePool can take stays pending with an event
// that names the pool and the reason.
func TestUnschedulablePodIsExplained(t *testing.T) {
	ns := namespace(t, "unschedulable")
	deployment(t, ns, "arm", 1, "1", func(p *corev1.PodSpec) {
		p.NodeSelector = map[string]string{v1.LabelArch: "arm64"} // the tutorial pool is amd64 only
	})
	ctx := context.Background()
	var why string
	eventually(t, time.Minute, "a FailedScheduling event from lathe naming the nodepool", func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := s.kubeClient.List(ctx, &pods, client.InNamespace(ns)); err != nil || len(pods.Items) == 0 {
			return false, err
		}
		evts, err := events(ctx, ns, "Pod", pods.Items[0].Name, "FailedScheduling")
		if err != nil {
			return false, err
		}
		for _, e := range evts {
			if strings.Contains(e.Message, "nodepool default") {
				why = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if !strings.Contains(why, v1.LabelArch) {
		t.Errorf("the reason does not say what is incompatible: %q", why)
	}
	var claims v1.NodeClaimList
	if err := s.kubeClient.List(ctx, &claims); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 0 {
		t.Errorf("lathe launched %d nodeclaims for a pod no pool can hold", len(claims.Items))
	}
}

// TestDeleteNodeClaimDrainsNode deletes a NodeClaim as a user would and checks that its node is drained and
// removed, its instance is gone, and its pods run elsewhere.
func TestDeleteNodeClaimDrainsNode(t *testing.T) {
	ns := namespace(t, "delete")
	deployment(t, ns, "web", 2, "1", nil)
	runningPods(t, ns, "web", 2, 2*time.Minute)
	claims := readyNodeClaims(t)
	victim := claims[0]
	ctx := context.Background()
	if err := s.kubeClient.Delete(ctx, &victim); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the nodeclaim and its node to be gone", func(ctx context.Context) (bool, error) {
		err := s.kubeClient.Get(ctx, client.ObjectKey{Name: victim.Name}, &v1.NodeClaim{})
		if client.IgnoreNotFound(err) != nil {
			return false, err
		}
		nodeErr := s.kubeClient.Get(ctx, client.ObjectKey{Name: victim.Status.NodeName}, &corev1.Node{})
		return err != nil && nodeErr != nil, client.IgnoreNotFound(nodeErr)
	})
	pods := runningPods(t, ns, "web", 2, 2*time.Minute)
	for _, p := range pods {
		if p.Spec.NodeName == victim.Status.NodeName {
			t.Errorf("pod %s still on the deleted node", p.Name)
		}
	}
}

// TestInterruptedInstanceIsReplaced terminates a node's instance through the simulated cloud, as
// `kubectl annotate node X sim.lathe.sh/interrupt=instance_terminated` does; the node and its NodeClaim go,
// and the pods run again on a node Lathe launches in its place.
func TestInterruptedInstanceIsReplaced(t *testing.T) {
	ns := namespace(t, "interrupt")
	deployment(t, ns, "web", 2, "1", nil)
	pods := runningPods(t, ns, "web", 2, 2*time.Minute)
	victim := pods[0].Spec.NodeName
	ctx := context.Background()
	node := &corev1.Node{}
	if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: victim}, node); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Annotations[sim.InterruptAnnotationKey] = string(sim.InterruptionTerminating)
	if err := s.kubeClient.Patch(ctx, node, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the interrupted node and its nodeclaim to be gone", func(ctx context.Context) (bool, error) {
		var claims v1.NodeClaimList
		if err := s.kubeClient.List(ctx, &claims); err != nil {
			return false, err
		}
		for _, c := range claims.Items {
			if c.Status.NodeName == victim {
				return false, nil
			}
		}
		err := s.kubeClient.Get(ctx, client.ObjectKey{Name: victim}, &corev1.Node{})
		return err != nil, client.IgnoreNotFound(err)
	})
	// The kube-controller-manager's pod garbage collector removes the pods of the vanished node (after its
	// 40 s quarantine); the Deployment replaces them and Lathe provisions for the replacements.
	eventually(t, 4*time.Minute, "2 web pods running elsewhere", func(ctx context.Context) (bool, error) {
		var list corev1.PodList
		if err := s.kubeClient.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"app": "web"}); err != nil {
			return false, err
		}
		running := 0
		for _, p := range list.Items {
			if p.Spec.NodeName == victim {
				return false, nil
			}
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 2, nil
	})
}

// TestLimitsStopScaleOut gives a pool a 4-cpu limit and asks for more; Lathe must launch up to the limit
// and not beyond, and say why the rest stay pending.
func TestLimitsStopScaleOut(t *testing.T) {
	ns := namespace(t, "limits")
	ctx := context.Background()
	pool := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "limited"},
		Spec: v1.NodePoolSpec{
			Weight: ptr(int32(100)),
			Limits: v1.Limits{corev1.ResourceCPU: resource.MustParse("4")},
			Template: v1.NodeClaimTemplate{
				ObjectMeta: v1.ObjectMeta{Labels: map[string]string{"team": "limited"}},
				Spec: v1.NodeClaimTemplateSpec{
					Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
					NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				},
			},
		},
	}
	if err := s.kubeClient.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.kubeClient.Delete(context.Background(), pool) })
	deployment(t, ns, "limited", 6, "1", func(p *corev1.PodSpec) { p.NodeSelector = map[string]string{"team": "limited"} })
	eventually(t, 2*time.Minute, "a FailedScheduling event about the limit", func(ctx context.Context) (bool, error) {
		var list corev1.EventList
		if err := s.kubeClient.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Reason == "FailedScheduling" && strings.Contains(e.Message, "nodepool limited") && strings.Contains(e.Message, "limit") {
				return true, nil
			}
		}
		return false, nil
	})
	var claims v1.NodeClaimList
	if err := s.kubeClient.List(ctx, &claims, client.MatchingLabels{v1.NodePoolLabelKey: "limited"}); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) == 0 {
		t.Fatal("no nodeclaim was launched up to the limit")
	}
	total := resource.Quantity{}
	for _, c := range readyNodeClaims(t) {
		if c.Labels[v1.NodePoolLabelKey] == "limited" {
			total.Add(c.Status.Capacity[corev1.ResourceCPU])
		}
	}
	if total.Cmp(resource.MustParse("4")) > 0 {
		t.Fatalf("the limited pool holds %s cpu, over its limit of 4", total.String())
	}
}
