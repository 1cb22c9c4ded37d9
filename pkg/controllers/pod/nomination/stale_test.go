package nomination_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/pod/nomination"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// laggingReader reads one pod as it was at a chosen moment, the way the manager's cache does until the watch
// event of a later write arrives.
type laggingReader struct {
	client.Client
	key types.NamespacedName
	old *corev1.Pod // served for key while set
}

func (r *laggingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if pod, ok := obj.(*corev1.Pod); ok && r.old != nil && key == r.key {
		r.old.DeepCopyInto(pod)
		return nil
	}
	return r.Client.Get(ctx, key, obj, opts...)
}

var _ = Describe("Controller reading through a lagging cache", func() {
	It("does not take its own hint, not yet seen, for the kube-scheduler clearing it", func(ctx context.Context) {
		clk := clocktesting.NewFakeClock(time.Now())
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "lagging", Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, pod)).To(Succeed()) })
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "open-node",
			Labels: map[string]string{v1.NodeRegisteredLabelKey: "true", v1.NodeInitializedLabelKey: "true"}}}
		Expect(env.Client.Create(ctx, node)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, node)).To(Succeed()) })

		key := client.ObjectKeyFromObject(pod)
		reader := &laggingReader{Client: env.Client, key: key}
		noms := nominations{key: {Pod: key, Target: state.Target{NodeClaim: "default-abc"}, NodeName: node.Name, Until: clk.Now().Add(time.Minute)}}
		c := nomination.NewController(nomination.Deps{Client: reader, Nominations: noms, Clock: clk})
		reconcileAndGet := func() *corev1.Pod {
			_, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: key})
			Expect(err).NotTo(HaveOccurred())
			got := &corev1.Pod{}
			Expect(env.Client.Get(ctx, key, got)).To(Succeed())
			return got
		}
		// The Node is seen open, long enough ago that a cleared hint to it counts as a rejection.
		c.PodsNominatedTo(ctx, node)
		clk.Step(time.Minute / 4)

		unhinted := pod.DeepCopy()
		Expect(reconcileAndGet().Status.NominatedNodeName).To(Equal(node.Name))

		By("read again before the cache has the write: the hint stays, and so does the nomination")
		reader.old = unhinted
		Expect(reconcileAndGet().Status.NominatedNodeName).To(Equal(node.Name))
		Expect(noms).To(HaveKey(key))

		By("the kube-scheduler clearing the hint, seen by the cache: a rejection")
		got := &corev1.Pod{}
		Expect(env.Client.Get(ctx, key, got)).To(Succeed())
		stored := got.DeepCopy()
		got.Status.NominatedNodeName = ""
		Expect(env.Client.Status().Patch(ctx, got, client.MergeFrom(stored), client.FieldOwner("kube-scheduler"))).To(Succeed())
		reader.old = nil
		Expect(reconcileAndGet().Status.NominatedNodeName).To(BeEmpty())
		Expect(noms).NotTo(HaveKey(key))
	})
})
