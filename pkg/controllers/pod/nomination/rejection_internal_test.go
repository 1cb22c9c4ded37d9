package nomination

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

func TestOpeningsRememberTheFirstSightOfAnOpenNode(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	node := func(name string, labels ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		for _, l := range labels {
			n.Labels[l] = "true"
		}
		return n
	}
	initialized := []string{v1.NodeRegisteredLabelKey, v1.NodeInitializedLabelKey}
	o := newOpenings()
	held := node("held")
	held.Spec.Taints = []corev1.Taint{v1.UnregisteredNoScheduleTaint}
	o.see(held, now)
	// Registered, but the kube-scheduler still refuses it: the not-ready taint, or a startup taint.
	notReady := node("not-ready", v1.NodeRegisteredLabelKey)
	notReady.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
	o.see(notReady, now)
	o.see(node("a", initialized...), now)
	o.see(node("a", initialized...), now.Add(time.Second)) // seen again: the first sight counts
	if got := o.openFor("a", now.Add(3*time.Second)); got != 3*time.Second {
		t.Errorf("a open for %v, want 3s", got)
	}
	for _, name := range []string{"held", "not-ready"} {
		if got := o.openFor(name, now.Add(time.Minute)); got != 0 {
			t.Errorf("%s counts as open (%v)", name, got)
		}
	}

	deleting := node("a", initialized...)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	o.see(deleting, now.Add(4*time.Second))
	if got := o.openFor("a", now.Add(5*time.Second)); got != 0 {
		t.Errorf("a Node being deleted still counts as open (%v)", got)
	}

	o.see(node("old", initialized...), now)
	o.see(node("new", initialized...), now.Add(openingsKept+time.Second))
	if _, kept := o.at["old"]; kept {
		t.Errorf("an opening older than %v is still kept", openingsKept)
	}
}

// A Node's initialization is the Node event that opens it: the pods nominated to it are looked at again
// then, so that a hint cleared afterwards is judged against the opening.
func TestNodeInitializationWakesTheNominatedPods(t *testing.T) {
	before := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{v1.NodeRegisteredLabelKey: "true"}}}
	after := before.DeepCopy()
	after.Labels[v1.NodeInitializedLabelKey] = "true"
	if !nodeChanged(before, after) {
		t.Error("the Node's initialization is not an update the controller looks at")
	}
	heartbeat := after.DeepCopy()
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if nodeChanged(after, heartbeat) {
		t.Error("a status-only update wakes the nominated pods")
	}
}
