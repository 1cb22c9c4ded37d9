package solver

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// podRequests reads a one-container pod's requests directly; it must agree with scheduling.PodRequests
// for every pod.
func TestPodRequestsAgreesWithPodRequests(t *testing.T) {
	list := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	container := func(requests corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests}}
	}
	dims := newResourceDims([]corev1.ResourceList{list("example.com/gpu", "1")})
	pods := []*corev1.Pod{
		{Spec: corev1.PodSpec{Containers: []corev1.Container{container(list("cpu", "544m", "memory", "100Mi"))}}},
		{Spec: corev1.PodSpec{Containers: []corev1.Container{container(list("cpu", "1.5", "memory", "1.5", "pods", "3", "example.com/gpu", "2"))}}},
		{Spec: corev1.PodSpec{Containers: []corev1.Container{container(nil)}}},
		{Spec: corev1.PodSpec{Containers: []corev1.Container{container(list("cpu", "1")), container(list("cpu", "250m", "memory", "1Gi"))}}},
		{Spec: corev1.PodSpec{Containers: []corev1.Container{container(list("cpu", "1"))}, InitContainers: []corev1.Container{container(list("cpu", "2"))}}},
		{Spec: corev1.PodSpec{Containers: []corev1.Container{container(list("cpu", "1"))}, Overhead: list("cpu", "100m")}},
	}
	for i, pod := range pods {
		if got, want := podRequests(pod, dims), dims.vec(scheduling.PodRequests(pod)); !slices.Equal(got, want) {
			t.Errorf("pod %d: requests %v, want %v", i, got, want)
		}
	}
}
