package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

func TestFits(t *testing.T) {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	for _, tc := range []struct {
		name     string
		requests corev1.ResourceList
		want     bool
	}{
		{"nothing", nil, true},
		{"within", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, true},
		{"over", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2001m")}, false},
		{"missing resource", corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}, false},
		{"missing resource at zero", corev1.ResourceList{"example.com/gpu": resource.MustParse("0")}, true},
	} {
		if got := scheduling.Fits(tc.requests, alloc); got != tc.want {
			t.Errorf("%s: Fits = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNodeReadyStatus(t *testing.T) {
	node := &corev1.Node{}
	if got := scheduling.NodeReadyStatus(node); got != corev1.ConditionUnknown {
		t.Errorf("no condition: %s, want Unknown", got)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}, {Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	if got := scheduling.NodeReadyStatus(node); got != corev1.ConditionFalse {
		t.Errorf("Ready=False: %s", got)
	}
}
