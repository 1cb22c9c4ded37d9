package lifecycle

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// The controller returns launch errors for backoff, which drops RequeueAfter, so the launch-timeout requeue
// is checked on the phase itself.
func TestLivenessRequeuesUntilLaunchTimeout(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(created.Add(90 * time.Second))
	l := &liveness{clock: clk}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
	setUnknown(nc, clk.Now(), v1.ConditionTypeLaunched, ReasonLaunchFailed, "throttled")

	out, err := l.reconcile(context.Background(), nc)
	if err != nil || out.deleted || out.requeueAfter != 3*time.Minute+30*time.Second {
		t.Errorf("reconcile = %+v, %v; want requeue after 3m30s", out, err)
	}

	setTrue(nc, clk.Now(), v1.ConditionTypeLaunched)
	out, err = l.reconcile(context.Background(), nc)
	if err != nil || out.requeueAfter != 13*time.Minute+30*time.Second {
		t.Errorf("launched: reconcile = %+v, %v; want requeue after 13m30s", out, err)
	}
}

func TestReadyComposition(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nc := &v1.NodeClaim{}
	setReady(nc, now)
	if c := findCondition(nc, v1.ConditionTypeReady); c.Status != metav1.ConditionUnknown || c.Reason != "AwaitingReconciliation" {
		t.Errorf("no conditions: Ready = %+v", c)
	}
	setTrue(nc, now, v1.ConditionTypeLaunched)
	setCondition(nc, now, v1.ConditionTypeRegistered, metav1.ConditionFalse, ReasonMultipleNodesFound, "two nodes")
	setUnknown(nc, now, v1.ConditionTypeInitialized, ReasonNotRegistered, "node not registered")
	setReady(nc, now)
	if c := findCondition(nc, v1.ConditionTypeReady); c.Status != metav1.ConditionFalse || c.Reason != ReasonMultipleNodesFound || c.Message != "two nodes" {
		t.Errorf("registered false: Ready = %+v", c)
	}
	setTrue(nc, now, v1.ConditionTypeRegistered)
	setTrue(nc, now, v1.ConditionTypeInitialized)
	setReady(nc, now)
	if c := findCondition(nc, v1.ConditionTypeReady); c.Status != metav1.ConditionTrue {
		t.Errorf("all true: Ready = %+v", c)
	}
}

func findCondition(nc *v1.NodeClaim, conditionType string) metav1.Condition {
	for _, c := range nc.Status.Conditions {
		if c.Type == conditionType {
			return c
		}
	}
	return metav1.Condition{}
}
