package disruption_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
)

// noMarks is a Marker that records nothing.
type noMarks struct{}

func (noMarks) Mark(...string)   {}
func (noMarks) Unmark(...string) {}

// Unmark takes the disrupted taint and the disruption reason off a candidate whose Node and NodeClaim other
// writers changed since the copies it read (a label, the claim's pod event time): only a change of the
// taints or conditions themselves would make it lose.
func TestUnmarkWinsOverUnrelatedWritesSinceItsRead(t *testing.T) {
	startEnv(t)
	t.Cleanup(func() { cleanup(t) })
	ctx := context.Background()
	createPool(t)
	sn := createNode(t, "marked", 4, "")
	node := taintDisrupted(t, "marked")
	claim := &v1.NodeClaim{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sn.NodeClaim), claim); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue,
		Reason: string(v1.DisruptionReasonUnderutilized), LastTransitionTime: metav1.Now()})
	if err := env.Client.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}

	kube, err := env.StaleReadClient(func(ctx context.Context, read client.Object) error {
		switch o := read.(type) { // another writer, right after the read
		case *corev1.Node:
			o.Labels["team"] = "a"
			return env.Client.Update(ctx, o)
		case *v1.NodeClaim:
			o.Status.LastPodEventTime = metav1.NewTime(time.Now().Truncate(time.Second))
			return env.Client.Status().Update(ctx, o)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := disruption.Unmark(ctx, kube, noMarks{}, node, claim); err != nil {
		t.Fatalf("unmarking: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "marked"}, node); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(node.Spec.Taints, v1.IsDisruptedTaint) || node.Labels["team"] != "a" {
		t.Errorf("node taints %v labels %v: want the disrupted taint gone and the other writer's label kept", node.Spec.Taints, node.Labels)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
		t.Fatal(err)
	}
	if meta.FindStatusCondition(claim.Status.Conditions, v1.ConditionTypeDisruptionReason) != nil || claim.Status.LastPodEventTime.IsZero() {
		t.Errorf("claim conditions %v, last pod event %v: want the disruption reason gone and the other writer's time kept",
			claim.Status.Conditions, claim.Status.LastPodEventTime)
	}
}
