package lifecycle

import (
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// maxMessageLength bounds condition and event messages built from cloud provider errors.
const maxMessageLength = 1024

// setCondition sets a condition of the claim; the transition time only moves when the status changes.
func setCondition(nodeClaim *v1.NodeClaim, now time.Time, conditionType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&nodeClaim.Status.Conditions, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            truncate(message),
		ObservedGeneration: nodeClaim.Generation,
		LastTransitionTime: metav1.NewTime(now),
	})
}

// setTrue sets the condition True with its type as the reason, as Karpenter does.
func setTrue(nodeClaim *v1.NodeClaim, now time.Time, conditionType string) {
	setCondition(nodeClaim, now, conditionType, metav1.ConditionTrue, conditionType, "")
}

// setUnknown sets the condition Unknown with the reason and message.
func setUnknown(nodeClaim *v1.NodeClaim, now time.Time, conditionType, reason, message string) {
	setCondition(nodeClaim, now, conditionType, metav1.ConditionUnknown, reason, message)
}

// isTrue reports whether the claim's condition is True.
func isTrue(nodeClaim *v1.NodeClaim, conditionType string) bool {
	return meta.IsStatusConditionTrue(nodeClaim.Status.Conditions, conditionType)
}

// setReady sets Ready to Launched ∧ Registered ∧ Initialized: True when all three are True, otherwise the
// status, reason and message of the first that isn't.
func setReady(nodeClaim *v1.NodeClaim, now time.Time) {
	for _, t := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		c := meta.FindStatusCondition(nodeClaim.Status.Conditions, t)
		if c == nil {
			setUnknown(nodeClaim, now, v1.ConditionTypeReady, "AwaitingReconciliation", "object is awaiting reconciliation")
			return
		}
		if c.Status != metav1.ConditionTrue {
			setCondition(nodeClaim, now, v1.ConditionTypeReady, c.Status, c.Reason, c.Message)
			return
		}
	}
	setTrue(nodeClaim, now, v1.ConditionTypeReady)
}

// truncate shortens s to maxMessageLength bytes, keeping it valid UTF-8.
func truncate(s string) string {
	if len(s) <= maxMessageLength {
		return s
	}
	cut := maxMessageLength
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
