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
	node := func(name string, registered bool, taints ...corev1.Taint) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}, Spec: corev1.NodeSpec{Taints: taints}}
		if registered {
			n.Labels[v1.NodeRegisteredLabelKey] = "true"
		}
		return n
	}
	o := newOpenings()
	o.see(node("held", false, v1.UnregisteredNoScheduleTaint), now)
	o.see(node("registering", true, v1.UnregisteredNoScheduleTaint), now)
	o.see(node("a", true), now)
	o.see(node("a", true), now.Add(time.Second)) // seen again: the first sight counts
	if got := o.openFor("a", now.Add(3*time.Second)); got != 3*time.Second {
		t.Errorf("a open for %v, want 3s", got)
	}
	for _, name := range []string{"held", "registering"} {
		if got := o.openFor(name, now.Add(time.Minute)); got != 0 {
			t.Errorf("%s counts as open (%v)", name, got)
		}
	}

	deleting := node("a", true)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	o.see(deleting, now.Add(4*time.Second))
	if got := o.openFor("a", now.Add(5*time.Second)); got != 0 {
		t.Errorf("a Node being deleted still counts as open (%v)", got)
	}

	o.see(node("old", true), now)
	o.see(node("new", true), now.Add(openingsKept+time.Second))
	if _, kept := o.at["old"]; kept {
		t.Errorf("an opening older than %v is still kept", openingsKept)
	}
}
