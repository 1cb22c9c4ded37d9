package provisioning

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

func TestNodeControllerTriggersForDrainingNodes(t *testing.T) {
	ctx := context.Background()
	now := metav1.Now()
	for _, tc := range []struct {
		name    string
		node    *corev1.Node
		trigger bool
	}{
		{"ready node", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, false},
		{"other taint", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "example.com/gpu", Effect: corev1.TaintEffectNoSchedule}}}}, false},
		{"disrupted taint", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{v1.DisruptedNoScheduleTaint}}}, true},
		{"being deleted", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", DeletionTimestamp: &now, Finalizers: []string{v1.TerminationFinalizer}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientBuilder().WithObjects(tc.node).Build()
			p := NewProvisioner(Deps{Client: kube, Clock: clocktesting.NewFakeClock(time.Now()), BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second,
				Registerer: prometheus.NewRegistry()})
			result, err := NewNodeController(kube, p).Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tc.node)})
			if err != nil {
				t.Fatal(err)
			}
			if _, open := p.batcher.TimeLeft(); open != tc.trigger {
				t.Errorf("triggered = %v, want %v", open, tc.trigger)
			}
			if p.Planning() {
				t.Error("a draining node counts as a pending pod to plan")
			}
			if (result.RequeueAfter > 0) != tc.trigger {
				t.Errorf("requeue after %s; a draining node is looked at again, others are not", result.RequeueAfter)
			}
		})
	}
}

// A pending pod keeps triggering the provisioner: a NodePool whose limit is raised, say, announces nothing
// about the pods it held back.
func TestPodControllerTriggersAgainWhilePodsPend(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		trigger bool
	}{
		{"pending", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}, true},
		{"bound", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "n"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientBuilder().WithObjects(tc.pod).Build()
			p := NewProvisioner(Deps{Client: kube, Clock: clocktesting.NewFakeClock(time.Now()), BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second,
				Registerer: prometheus.NewRegistry()})
			result, err := NewPodController(kube, p).Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tc.pod)})
			if err != nil {
				t.Fatal(err)
			}
			if _, open := p.batcher.TimeLeft(); open != tc.trigger {
				t.Errorf("triggered = %v, want %v", open, tc.trigger)
			}
			if p.Planning() != tc.trigger {
				t.Errorf("planning = %v; a pending pod no pass has read is to be planned", p.Planning())
			}
			if want := map[bool]time.Duration{true: podRetriggerInterval}[tc.trigger]; result.RequeueAfter != want {
				t.Errorf("requeue after %s, want %s", result.RequeueAfter, want)
			}
		})
	}
}
