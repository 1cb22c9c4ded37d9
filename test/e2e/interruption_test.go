package e2e_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
)

// TestSpotInterruptionReplacesBeforeReclaim interrupts a spot node as
// `kubectl annotate node X sim.lathe.sh/interrupt=spot_interrupted` does. Lathe must delete its NodeClaim on
// the warning and run the pods on a replacement before the simulated cloud reclaims the instance two
// minutes later, and must not launch the interrupted offering again.
func TestSpotInterruptionReplacesBeforeReclaim(t *testing.T) {
	ns := namespace(t, "spot")
	spotPool(t)
	deployment(t, ns, "spot", 2, "1", func(spec *corev1.PodSpec) {
		spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "spot"}
		spec.Tolerations = []corev1.Toleration{{Key: spotTaint, Operator: corev1.TolerationOpExists}}
	})
	pods := runningPods(t, ns, "spot", 2, 2*time.Minute)
	ctx := context.Background()
	victim := &corev1.Node{}
	if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: pods[0].Spec.NodeName}, victim); err != nil {
		t.Fatal(err)
	}
	instanceType, zone := victim.Labels[v1.LabelInstanceType], victim.Labels[v1.LabelTopologyZone]
	if victim.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeSpot {
		t.Fatalf("node %s is %q, want spot", victim.Name, victim.Labels[v1.CapacityTypeLabelKey])
	}
	patch := client.MergeFrom(victim.DeepCopy())
	victim.Annotations[sim.InterruptAnnotationKey] = string(sim.InterruptionSpot)
	if err := s.kubeClient.Patch(ctx, victim, patch); err != nil {
		t.Fatal(err)
	}
	interrupted := time.Now()

	// The cloud reclaims the instance 2 minutes after the warning; everything must have moved before then.
	deadline := sim.SpotInterruptionNotice - 10*time.Second
	eventually(t, deadline, "lathe to delete the interrupted nodeclaim", func(ctx context.Context) (bool, error) {
		events, err := events(ctx, "", "NodeClaim", victim.Labels[sim.NodeClaimLabelKey], "TerminatingOnInterruption")
		return len(events) > 0, err
	})
	var replacements []string
	eventually(t, deadline-time.Since(interrupted), "2 spot pods running on other nodes", func(ctx context.Context) (bool, error) {
		var list corev1.PodList
		if err := s.kubeClient.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"app": "spot"}); err != nil {
			return false, err
		}
		replacements = nil
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == victim.Name || !p.DeletionTimestamp.IsZero() {
				continue
			}
			replacements = append(replacements, p.Spec.NodeName)
		}
		return len(replacements) == 2, nil
	})
	t.Logf("pods running on %v %s after the interruption", replacements, time.Since(interrupted).Round(time.Second))
	for _, name := range replacements {
		node := &corev1.Node{}
		if err := s.kubeClient.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			t.Fatal(err)
		}
		if node.CreationTimestamp.After(interrupted) && node.Labels[v1.LabelInstanceType] == instanceType && node.Labels[v1.LabelTopologyZone] == zone {
			t.Errorf("replacement %s relaunched the interrupted offering %s in %s", name, instanceType, zone)
		}
	}
}

// spotTaint keeps other tests' pods off the spot pool's nodes.
const spotTaint = "e2e.lathe.sh/spot"

// spotPool creates a NodePool of spot capacity, deleted when the test ends.
func spotPool(t testing.TB) {
	t.Helper()
	pool := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "spot"},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot}},
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
				{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
			},
			Taints:       []corev1.Taint{{Key: spotTaint, Effect: corev1.TaintEffectNoSchedule}},
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		}}},
	}
	ctx := context.Background()
	if err := s.kubeClient.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	// Runs before the namespace's clean-up (registered earlier), which waits for the pool's nodes to go.
	t.Cleanup(func() {
		if err := client.IgnoreNotFound(s.kubeClient.Delete(ctx, pool)); err != nil {
			t.Errorf("deleting the spot nodepool: %v", err)
		}
	})
}
