package scheduling

import corev1 "k8s.io/api/core/v1"

// Fits reports whether requests fit in allocatable: every requested resource is there in at least the
// requested quantity (a resource requested at zero need not be there).
func Fits(requests, allocatable corev1.ResourceList) bool {
	for name, q := range requests {
		if have, ok := allocatable[name]; (!ok && !q.IsZero()) || have.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// NodeReadyStatus returns the status of the Node's Ready condition, Unknown when it has none.
func NodeReadyStatus(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}
