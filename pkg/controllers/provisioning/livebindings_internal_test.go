package provisioning

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// unboundReader is an API server whose unbound pods are the given ones.
type unboundReader struct{ unbound []corev1.Pod }

func (r unboundReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return nil
}

func (r unboundReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
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
	in := solver.Input{Pods: []*corev1.Pod{pending, stillPending}, Nodes: []solver.ExistingNode{{Node: node, Pods: []*corev1.Pod{onNode, waiting, stillWaiting}}}}
	p := &Provisioner{deps: Deps{Reader: unboundReader{unbound: []corev1.Pod{*stillWaiting, *stillPending}}}}

	out := p.liveBindings(context.Background(), in)
	if len(out.Pods) != 1 || out.Pods[0].Name != "still-pending" {
		t.Errorf("pending pods %v, want [still-pending]", names(out.Pods))
	}
	got := out.Nodes[0].Pods
	if len(got) != 3 || got[1].Name != "waiting" || got[1].Spec.NodeName != "room" || !awaitsBinding(got[2]) || got[0] != onNode {
		t.Errorf("the Node's pods %v (bound to %q, %q, %q), want on-node, waiting bound to room, still-waiting unbound", names(got), got[0].Spec.NodeName, got[1].Spec.NodeName, got[2].Spec.NodeName)
	}
	if waiting.Spec.NodeName != "" || in.Nodes[0].Pods[1] != waiting {
		t.Error("the input given was changed")
	}
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
