package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// IsDaemonSetPod reports whether a DaemonSet controls the pod: such a pod belongs to its node, runs on
// every new node anyway, and is neither provisioned for nor drained.
func IsDaemonSetPod(pod *corev1.Pod) bool { return controlledBy(pod, "DaemonSet") }

// IsStatefulSetPod reports whether a StatefulSet controls the pod.
func IsStatefulSetPod(pod *corev1.Pod) bool { return controlledBy(pod, "StatefulSet") }

// IsMirrorPod reports whether the pod is the API server's mirror of a static pod: it carries the
// kubernetes.io/config.mirror annotation or the kubelet's Node owns it. It lives and dies with its node.
func IsMirrorPod(pod *corev1.Pod) bool {
	if _, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	return controlledBy(pod, "Node")
}

// IsTerminal reports whether the pod has finished (Succeeded or Failed).
func IsTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// IsTerminating reports whether the pod's deletion has begun.
func IsTerminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

// ToleratesDisruptedTaint reports whether the pod tolerates karpenter.sh/disrupted:NoSchedule: a drain
// leaves such a pod on its node.
func ToleratesDisruptedTaint(pod *corev1.Pod) bool {
	return Tolerates(pod.Spec.Tolerations, []corev1.Taint{v1.DisruptedNoScheduleTaint}, false) == nil
}

// IsReschedulable reports whether a pod bound to a node that is going away will need room elsewhere: it
// is active (not finished, not terminating; a terminating StatefulSet pod counts, as its replacement,
// with the same name, is only created once it is gone), is not the node's own (DaemonSet or mirror pod),
// and is drained (does not tolerate the disrupted taint).
func IsReschedulable(pod *corev1.Pod) bool {
	active := !IsTerminal(pod) && (!IsTerminating(pod) || IsStatefulSetPod(pod))
	return active && !IsDaemonSetPod(pod) && !IsMirrorPod(pod) && !ToleratesDisruptedTaint(pod)
}

// controlledBy reports whether the pod's controller is of the kind.
func controlledBy(pod *corev1.Pod, kind string) bool {
	owner := metav1.GetControllerOf(pod)
	return owner != nil && owner.Kind == kind
}
