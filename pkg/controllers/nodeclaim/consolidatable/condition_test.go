package consolidatable_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/consolidatable"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func pool(after string) *v1.NodePool {
	return &v1.NodePool{Spec: v1.NodePoolSpec{Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration(after)}}}
}

func initializedClaim(at time.Time) *v1.NodeClaim {
	return &v1.NodeClaim{Status: v1.NodeClaimStatus{Conditions: []metav1.Condition{{
		Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(at),
	}}}}
}

func TestConsolidatableFalseUntilConsolidateAfterThenTrue(t *testing.T) {
	claim := initializedClaim(t0)
	d := consolidatable.Compute(pool("30s"), claim, t0.Add(10*time.Second))
	if d.Condition == nil || d.Condition.Status != metav1.ConditionFalse || d.RequeueAfter != 20*time.Second {
		t.Fatalf("10s after initialization: %+v", d)
	}
	if !strings.Contains(d.Condition.Message, "20s left") {
		t.Errorf("message does not say the time left: %q", d.Condition.Message)
	}
	d = consolidatable.Compute(pool("30s"), claim, t0.Add(30*time.Second))
	if d.Condition == nil || d.Condition.Status != metav1.ConditionTrue || d.RequeueAfter != 0 {
		t.Fatalf("30s after initialization: %+v", d)
	}
}

func TestConsolidatableMeasuresFromLastPodEvent(t *testing.T) {
	claim := initializedClaim(t0)
	claim.Status.LastPodEventTime = metav1.NewTime(t0.Add(time.Minute))
	d := consolidatable.Compute(pool("30s"), claim, t0.Add(80*time.Second))
	if d.Condition == nil || d.Condition.Status != metav1.ConditionFalse || d.RequeueAfter != 10*time.Second {
		t.Fatalf("20s after a pod event: %+v", d)
	}
}

func TestConsolidatableAbsentWhenNeverOrNotInitialized(t *testing.T) {
	if d := consolidatable.Compute(pool("Never"), initializedClaim(t0), t0.Add(time.Hour)); d.Condition != nil {
		t.Errorf("consolidateAfter Never: %+v", d)
	}
	if d := consolidatable.Compute(pool("30s"), &v1.NodeClaim{}, t0.Add(time.Hour)); d.Condition != nil {
		t.Errorf("not initialized: %+v", d)
	}
	claim := initializedClaim(t0)
	consolidatable.Apply(claim, consolidatable.Compute(pool("0s"), claim, t0), t0)
	if !consolidatable.Apply(claim, consolidatable.Compute(pool("Never"), claim, t0), t0) ||
		meta.FindStatusCondition(claim.Status.Conditions, v1.ConditionTypeConsolidatable) != nil {
		t.Errorf("switching to Never did not remove the condition: %v", claim.Status.Conditions)
	}
}

func TestApplyWritesOnlyOnStatusChange(t *testing.T) {
	claim := initializedClaim(t0)
	if !consolidatable.Apply(claim, consolidatable.Compute(pool("30s"), claim, t0), t0) {
		t.Fatal("first False not written")
	}
	if consolidatable.Apply(claim, consolidatable.Compute(pool("30s"), claim, t0.Add(time.Second)), t0.Add(time.Second)) {
		t.Error("a countdown alone rewrote the condition")
	}
	if !consolidatable.Apply(claim, consolidatable.Compute(pool("30s"), claim, t0.Add(time.Minute)), t0.Add(time.Minute)) {
		t.Error("False → True not written")
	}
	c := meta.FindStatusCondition(claim.Status.Conditions, v1.ConditionTypeConsolidatable)
	if c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("condition %+v", c)
	}
}
