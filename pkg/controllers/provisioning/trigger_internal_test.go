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
			if (result.RequeueAfter > 0) != tc.trigger {
				t.Errorf("requeue after %s; a draining node is looked at again, others are not", result.RequeueAfter)
			}
		})
	}
}
