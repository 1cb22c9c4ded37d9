package provisioning

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// unboundReader is an API server whose unbound pods are the given ones; every other pod is bound. It counts
// the lists it serves.
type unboundReader struct {
	unbound []corev1.Pod
	lists   *int
}

func (r unboundReader) Get(_ context.Context, key client.ObjectKey, o client.Object, _ ...client.GetOption) error {
	for i := range r.unbound {
		if client.ObjectKeyFromObject(&r.unbound[i]) == key {
			r.unbound[i].DeepCopyInto(o.(*corev1.Pod))
			return nil
		}
	}
	pod := o.(*corev1.Pod)
	pod.Namespace, pod.Name, pod.UID, pod.Spec.NodeName = key.Namespace, key.Name, types.UID(key.Name), "somewhere"
	return nil
}

func (r unboundReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	*r.lists++
	list.(*corev1.PodList).Items = r.unbound
	return nil
}

// A pod waiting on a Node that the API server shows bound counts as bound there, so regrouping does not move
// it and plan another pod into its place; a pending pod bound since is left out; the rest stay as they are.
func TestLiveBindingsTakeWhatTheAPIServerShowsBound(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)}}
	}
	waiting, stillWaiting, pending, stillPending := pod("waiting"), pod("still-waiting"), pod("pending"), pod("still-pending")
	onNode := pod("on-node")
	onNode.Spec.NodeName = "room"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "room"}}
	// Many other pods pending: the unbound pods are listed rather than read one by one (liveReadLimit).
	var many []*corev1.Pod
	for i := range liveReadLimit {
		many = append(many, pod(fmt.Sprintf("other-%d", i)))
	}
	for _, others := range [][]*corev1.Pod{nil, many} {
		in := solver.Input{Pods: append([]*corev1.Pod{pending, stillPending}, others...), Nodes: []solver.ExistingNode{{Node: node, Pods: []*corev1.Pod{onNode, waiting, stillWaiting}}}}
		unbound := []corev1.Pod{*stillWaiting, *stillPending}
		for _, o := range others {
			unbound = append(unbound, *o)
		}
		p := &Provisioner{deps: Deps{Reader: unboundReader{unbound: unbound, lists: new(int)}}}

		out := p.liveBindings(context.Background(), in)
		if len(out.Pods) != 1+len(others) || out.Pods[0].Name != "still-pending" {
			t.Errorf("with %d other pods pending: pending pods %v, want still-pending and the others", len(others), names(out.Pods))
		}
		got := out.Nodes[0].Pods
		if len(got) != 3 || got[1].Name != "waiting" || got[1].Spec.NodeName != "room" || !awaitsBinding(got[2]) || got[0] != onNode {
			t.Errorf("the Node's pods %v (bound to %q, %q, %q), want on-node, waiting bound to room, still-waiting unbound", names(got), got[0].Spec.NodeName, got[1].Spec.NodeName, got[2].Spec.NodeName)
		}
		if waiting.Spec.NodeName != "" || in.Nodes[0].Pods[1] != waiting {
			t.Error("the input given was changed")
		}
	}
}

// A pass with few pods awaiting binding reads each of them, and lists nothing: a list waits for the API
// server's watch cache to catch up with etcd, seconds at the peak of a scale-up: it delayed each pass of one
// to three pods after a burst's release by 0.3-1.8 s.
func TestLiveBindingsReadFewPodsOneByOne(t *testing.T) {
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pending", UID: "pending"}}
	for _, n := range []int{1, liveReadLimit} {
		lists := 0
		in := solver.Input{}
		for i := range n {
			p := pending.DeepCopy()
			p.Name, p.UID = fmt.Sprintf("pending-%d", i), types.UID(fmt.Sprintf("pending-%d", i))
			in.Pods = append(in.Pods, p)
		}
		p := &Provisioner{deps: Deps{Reader: unboundReader{lists: &lists}}}
		out := p.liveBindings(context.Background(), in)
		if lists != 0 {
			t.Errorf("%d pods awaiting binding: %d lists, want none", n, lists)
		}
		if len(out.Pods) != 0 {
			t.Errorf("%d pods awaiting binding, all bound since: %v still pending", n, names(out.Pods))
		}
	}
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
