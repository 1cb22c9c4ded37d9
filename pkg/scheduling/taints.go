package scheduling

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// UntoleratedTaintError names the first taint a pod does not tolerate.
type UntoleratedTaintError struct {
	Taint corev1.Taint
}

func (e *UntoleratedTaintError) Error() string {
	if e.Taint.Value == "" {
		return fmt.Sprintf("taint %s:%s not tolerated", e.Taint.Key, e.Taint.Effect)
	}
	return fmt.Sprintf("taint %s=%s:%s not tolerated", e.Taint.Key, e.Taint.Value, e.Taint.Effect)
}

// Tolerates returns nil when the tolerations cover every NoSchedule and NoExecute taint, or an
// *UntoleratedTaintError for the first that isn't. PreferNoSchedule taints are soft and only count when
// includePreferNoSchedule is set (the simulator treats them as required before relaxing).
func Tolerates(tolerations []corev1.Toleration, taints []corev1.Taint, includePreferNoSchedule bool) error {
	for i := range taints {
		taint := &taints[i]
		if taint.Effect == corev1.TaintEffectPreferNoSchedule && !includePreferNoSchedule {
			continue
		}
		tolerated := false
		for j := range tolerations {
			if toleratesTaint(&tolerations[j], taint) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return &UntoleratedTaintError{Taint: *taint}
		}
	}
	return nil
}

// toleratesTaint applies the Kubernetes toleration rules: an empty effect matches every effect, an empty key
// with operator Exists matches every taint, Exists ignores the value and Equal (the default) compares it.
func toleratesTaint(t *corev1.Toleration, taint *corev1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return t.Key != "" && t.Value == taint.Value
	}
	return false
}
