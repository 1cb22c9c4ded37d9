package nomination_test

import (
	"context"
	"slices"
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
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// nominations is a fixed set of live nominations.
type nominations map[types.NamespacedName]state.Nomination

func (n nominations) NominationOf(pod types.NamespacedName) (state.Nomination, bool) {
	got, ok := n[pod]
	return got, ok
}

func (n nominations) NominatedWith(targets ...state.Target) []types.NamespacedName {
	var out []types.NamespacedName
	for k, v := range n {
		if slices.Contains(targets, v.Target) {
			out = append(out, k)
		}
	}
	return out
}

func (n nominations) Reject(pod types.NamespacedName, node string) bool {
	if got, ok := n[pod]; !ok || got.NodeName != node {
		return false
	}
	delete(n, pod)
	return true
}

func (n nominations) Nominations() []state.Nomination {
	var out []state.Nomination
	for _, v := range n {
		out = append(out, v)
	}
	return out
}

// replans records the pods the controller hands back to the provisioner.
type replans []types.NamespacedName

func (r *replans) TriggerPod(pod *corev1.Pod) { *r = append(*r, client.ObjectKeyFromObject(pod)) }

var _ = Describe("Controller", func() {
	var (
		clk    *clocktesting.FakeClock
		noms   nominations
		c      *nomination.Controller
		pod    *corev1.Pod
		key    types.NamespacedName
		replan *replans
	)

	BeforeEach(func(ctx context.Context) {
		clk = clocktesting.NewFakeClock(time.Now())
		noms = nominations{}
		replan = &replans{}
		c = nomination.NewController(nomination.Deps{Client: env.Client, Nominations: noms, Clock: clk, Replanner: replan})
		pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())
		key = client.ObjectKeyFromObject(pod)
	})
	AfterEach(func(ctx context.Context) {
		Expect(env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0))).To(Succeed())
	})

	reconcileAndGet := func(ctx context.Context) (*corev1.Pod, reconcile.Result) {
		result, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: key})
		Expect(err).NotTo(HaveOccurred())
		got := &corev1.Pod{}
		Expect(env.Client.Get(ctx, key, got)).To(Succeed())
		return got, result
	}

	It("sets status.nominatedNodeName to the planned Node as Lathe's field manager, and comes back at expiry", func(ctx context.Context) {
		noms[key] = state.Nomination{Pod: key, Target: state.Target{NodeClaim: "default-abc"}, NodeName: "node-1", Until: clk.Now().Add(20 * time.Second)}
		got, result := reconcileAndGet(ctx)
		Expect(got.Status.NominatedNodeName).To(Equal("node-1"))
		Expect(provisioning.NominatedNodeNameOwner(got)).To(Equal(provisioning.NominationFieldManager))
		Expect(result.RequeueAfter).To(BeNumerically(">=", 20*time.Second))
	})

	It("clears a nomination it set once the plan no longer holds", func(ctx context.Context) {
		noms[key] = state.Nomination{Pod: key, NodeName: "node-1", Until: clk.Now().Add(time.Second)}
		reconcileAndGet(ctx)
		delete(noms, key)
		got, _ := reconcileAndGet(ctx)
		Expect(got.Status.NominatedNodeName).To(BeEmpty())
	})

	It("moves a nomination it set when the plan moves", func(ctx context.Context) {
		noms[key] = state.Nomination{Pod: key, NodeName: "node-1", Until: clk.Now().Add(time.Second)}
		reconcileAndGet(ctx)
		noms[key] = state.Nomination{Pod: key, NodeName: "node-2", Until: clk.Now().Add(time.Second)}
		got, _ := reconcileAndGet(ctx)
		Expect(got.Status.NominatedNodeName).To(Equal("node-2"))
	})

	It("ends the nomination when the kube-scheduler clears the hint to an open Node, and not while the Node is held", func(ctx context.Context) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
		Expect(env.Client.Create(ctx, node)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, node)).To(Succeed()) })
		clear := func() {
			got := &corev1.Pod{}
			Expect(env.Client.Get(ctx, key, got)).To(Succeed())
			stored := got.DeepCopy()
			got.Status.NominatedNodeName = ""
			Expect(env.Client.Status().Patch(ctx, got, client.MergeFrom(stored), client.FieldOwner("kube-scheduler"))).To(Succeed())
		}
		noms[key] = state.Nomination{Pod: key, Target: state.Target{NodeClaim: "default-abc"}, NodeName: "node-1", Until: clk.Now().Add(time.Minute)}
		got, _ := reconcileAndGet(ctx)
		Expect(got.Status.NominatedNodeName).To(Equal("node-1"))

		By("a failed attempt while the Node is held: the hint is written again")
		clear()
		clk.Step(time.Minute / 2)
		got, _ = reconcileAndGet(ctx)
		Expect(got.Status.NominatedNodeName).To(Equal("node-1"))
		Expect(noms).To(HaveKey(key))

		By("registered but not initialized (a startup taint, or not Ready yet), a while: still held")
		stored := node.DeepCopy()
		node.Labels = map[string]string{v1.NodeRegisteredLabelKey: "true"}
		Expect(env.Client.Patch(ctx, node, client.MergeFrom(stored))).To(Succeed())
		clear()
		reconcileAndGet(ctx)
		clk.Step(3 * time.Second)
		clear()
		got, _ = reconcileAndGet(ctx)
		Expect(got.Status.NominatedNodeName).To(Equal("node-1"))
		Expect(noms).To(HaveKey(key))

		By("the Node opens; a hint cleared within moments may come from an attempt begun before")
		stored = node.DeepCopy()
		node.Labels[v1.NodeInitializedLabelKey] = "true"
		Expect(env.Client.Patch(ctx, node, client.MergeFrom(stored))).To(Succeed())
		clear()
		got, _ = reconcileAndGet(ctx)
		Expect(got.Status.NominatedNodeName).To(Equal("node-1"))
		Expect(noms).To(HaveKey(key))
		Expect(*replan).To(BeEmpty(), "no pod is handed back while its nomination holds")

		By("cleared again once the Node has been open a while: the kube-scheduler rejected it, and the provisioner is told")
		clk.Step(3 * time.Second)
		clear()
		got, _ = reconcileAndGet(ctx)
		Expect(got.Status.NominatedNodeName).To(BeEmpty())
		Expect(noms).NotTo(HaveKey(key))
		Expect(*replan).To(ConsistOf(key))
	})

	It("never touches a nomination the kube-scheduler set", func(ctx context.Context) {
		stored := pod.DeepCopy()
		pod.Status.NominatedNodeName = "preemption-target"
		Expect(env.Client.Status().Patch(ctx, pod, client.MergeFrom(stored), client.FieldOwner("kube-scheduler"))).To(Succeed())
		noms[key] = state.Nomination{Pod: key, NodeName: "node-1", Until: clk.Now().Add(time.Second)}
		got, _ := reconcileAndGet(ctx)
		Expect(got.Status.NominatedNodeName).To(Equal("preemption-target"))
		delete(noms, key)
		got, _ = reconcileAndGet(ctx)
		Expect(got.Status.NominatedNodeName).To(Equal("preemption-target"))
	})

	It("counts the pods planned onto a Node not registered yet whose hint is not set, and those whose NodeClaim has no Node yet", func(ctx context.Context) {
		unhinted := func() int {
			clk.Step(time.Second) // past the memo
			n, err := c.Unhinted(ctx)
			Expect(err).NotTo(HaveOccurred())
			return n
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
		Expect(env.Client.Create(ctx, node)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, node)).To(Succeed()) })
		noms[key] = state.Nomination{Pod: key, Target: state.Target{NodeClaim: "default-in-flight"}}
		Expect(unhinted()).To(Equal(1), "a NodeClaim of the pass without a Node yet holds the Nodes that exist")
		noms[key] = state.Nomination{Pod: key, Target: state.Target{NodeClaim: "default-abc"}, NodeName: "node-1", Until: clk.Now().Add(time.Minute)}
		Expect(unhinted()).To(Equal(1))
		got, _ := reconcileAndGet(ctx)
		Expect(unhinted()).To(Equal(0))

		By("the kube-scheduler clearing the hint on a failed attempt: the pod was told, Lathe writes it again")
		stored := got.DeepCopy()
		got.Status.NominatedNodeName = ""
		Expect(env.Client.Status().Patch(ctx, got, client.MergeFrom(stored), client.FieldOwner("kube-scheduler"))).To(Succeed())
		Eventually(func(g Gomega) {
			cleared := &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, key, cleared)).To(Succeed())
			g.Expect(cleared.Status.NominatedNodeName).To(BeEmpty())
		}).Should(Succeed())
		Expect(unhinted()).To(Equal(0))

		By("the plan moving to another held Node: not told of that one yet")
		other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}}
		Expect(env.Client.Create(ctx, other)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, other)).To(Succeed()) })
		noms[key] = state.Nomination{Pod: key, Target: state.Target{NodeClaim: "default-def"}, NodeName: "node-2", Until: clk.Now().Add(time.Minute)}
		Expect(unhinted()).To(Equal(1))
		got, _ = reconcileAndGet(ctx)
		Expect(got.Status.NominatedNodeName).To(Equal("node-2"))
		Expect(unhinted()).To(Equal(0))
	})

	It("looks at the pods nominated to a NodeClaim once the claim gets the provider ID its Node is found by", func(ctx context.Context) {
		// A provider may create the Node before the claim's status records the provider ID: the Node's event
		// then finds no claim, and only the claim's update can bring the pods.
		noms[key] = state.Nomination{Pod: key, Target: state.Target{NodeClaim: "default-abc"}}
		claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abc"}}
		launched := claim.DeepCopy()
		launched.Status.ProviderID = "kwok://default-abc"
		Expect(nomination.ClaimFound(claim, launched)).To(BeTrue())
		Expect(nomination.ClaimFound(launched, launched.DeepCopy())).To(BeFalse())
		Expect(c.PodsNominatedToClaim(ctx, launched)).To(ConsistOf(reconcile.Request{NamespacedName: key}))
		other := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-xyz"}}
		Expect(c.PodsNominatedToClaim(ctx, other)).To(BeEmpty())
	})

	It("hints only the first of the pods of a spread group planned onto one Node, the next once it is bound", func(ctx context.Context) {
		spread := func(name string) *corev1.Pod {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
						WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
			Expect(env.Client.Create(ctx, p)).To(Succeed())
			return p
		}
		first, second := spread("web-a"), spread("web-b")
		target := state.Target{NodeClaim: "default-abc"}
		for _, p := range []*corev1.Pod{first, second} {
			k := client.ObjectKeyFromObject(p)
			noms[k] = state.Nomination{Pod: k, Target: target, NodeName: "node-1", Until: clk.Now().Add(time.Minute)}
		}
		hint := func(p *corev1.Pod) string {
			_, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)})
			Expect(err).NotTo(HaveOccurred())
			got := &corev1.Pod{}
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
			return got.Status.NominatedNodeName
		}
		Expect(hint(first)).To(Equal("node-1"))
		Expect(hint(second)).To(BeEmpty(), "the kube-scheduler would count web-a on node-1 against web-b's zone")

		By("a pod of another group, or one without a hard constraint, is hinted as usual")
		other := spread("api-a")
		other.Labels = map[string]string{"app": "api"}
		Expect(env.Client.Update(ctx, other)).To(Succeed())
		k := client.ObjectKeyFromObject(other)
		noms[k] = state.Nomination{Pod: k, Target: target, NodeName: "node-1", Until: clk.Now().Add(time.Minute)}
		Expect(hint(other)).To(Equal("node-1"))

		By("web-a bound: web-b is next")
		delete(noms, client.ObjectKeyFromObject(first))
		Expect(env.Client.Delete(ctx, first)).To(Succeed())
		Expect(hint(second)).To(Equal("node-1"))
	})

	It("does not hold a Node for a pod waiting behind a sibling", func(ctx context.Context) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
		Expect(env.Client.Create(ctx, node)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, node)).To(Succeed()) })
		target := state.Target{NodeClaim: "default-abc"}
		var keys []types.NamespacedName
		for _, name := range []string{"web-a", "web-b"} {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
						WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
			Expect(env.Client.Create(ctx, p)).To(Succeed())
			k := client.ObjectKeyFromObject(p)
			keys = append(keys, k)
			noms[k] = state.Nomination{Pod: k, Target: target, NodeName: "node-1", Until: clk.Now().Add(time.Minute)}
		}
		clk.Step(time.Second)
		n, err := c.Unhinted(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(1), "web-a")
		_, err = c.Reconcile(ctx, reconcile.Request{NamespacedName: keys[0]})
		Expect(err).NotTo(HaveOccurred())
		clk.Step(time.Second)
		n, err = c.Unhinted(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(0))
	})
})
