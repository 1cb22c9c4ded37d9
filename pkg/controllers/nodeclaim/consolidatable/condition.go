package consolidatable

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Desired is the Consolidatable condition a claim should have.
type Desired struct {
	// Condition is nil when the claim should have none.
	Condition *metav1.Condition
	// RequeueAfter is the time left until the condition turns True; zero when it needn't be checked again.
	RequeueAfter time.Duration
}

// Compute returns the claim's Consolidatable condition at now under the pool's consolidateAfter.
func Compute(pool *v1.NodePool, claim *v1.NodeClaim, now time.Time) Desired {
	after := pool.Spec.Disruption.ConsolidateAfter
	initialized := meta.FindStatusCondition(claim.Status.Conditions, v1.ConditionTypeInitialized)
	if after.IsNever() || initialized == nil || initialized.Status != metav1.ConditionTrue {
		return Desired{}
	}
	since := initialized.LastTransitionTime.Time
	if last := claim.Status.LastPodEventTime.Time; last.After(since) {
		since = last
	}
	left := since.Add(*after.Duration).Sub(now)
	if left > 0 {
		return Desired{
			Condition: &metav1.Condition{
				Type: v1.ConditionTypeConsolidatable, Status: metav1.ConditionFalse, Reason: "ConsolidateAfterNotElapsed",
				Message: fmt.Sprintf("consolidateAfter (%s) has not elapsed since the last pod event; %s left", after.String(), left.Round(time.Second)),
			},
			RequeueAfter: left,
		}
	}
	return Desired{Condition: &metav1.Condition{Type: v1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue, Reason: v1.ConditionTypeConsolidatable}}
}

// Apply sets the desired condition on the claim (or removes it) and reports whether anything changed. The
// transition time moves only when the status does; a False message that only counts down is left alone
// unless the status changes, so the claim is not rewritten every second.
func Apply(claim *v1.NodeClaim, d Desired, now time.Time) bool {
	current := meta.FindStatusCondition(claim.Status.Conditions, v1.ConditionTypeConsolidatable)
	if d.Condition == nil {
		return meta.RemoveStatusCondition(&claim.Status.Conditions, v1.ConditionTypeConsolidatable)
	}
	if current != nil && current.Status == d.Condition.Status && current.Reason == d.Condition.Reason {
		return false
	}
	c := *d.Condition
	c.ObservedGeneration = claim.Generation
	c.LastTransitionTime = metav1.NewTime(now)
	return meta.SetStatusCondition(&claim.Status.Conditions, c)
}
