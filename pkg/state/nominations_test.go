package state_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

var _ = Describe("Nominations", func() {
	var h *harness

	BeforeEach(func() { h = newHarness() })
	AfterEach(func(ctx context.Context) { cleanUp(ctx) })

	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: name} }

	It("keeps a pod nominated to an in-flight NodeClaim on it for as long as the claim is in flight", func(ctx context.Context) {
		claim := createNodeClaim(ctx, "pool-a-1", "pool-a", "", nil)
		pod := createPod(ctx, "p", "", "1", "1Gi", 0)
		h.sync(ctx, claim, pod)
		h.cluster.Nominate(pod, state.Target{NodeClaim: claim.Name})

		h.clock.Step(time.Hour)
		snap := h.cluster.Snapshot()
		Expect(snap.InFlight).To(HaveLen(1))
		Expect(snap.InFlight[0].Nominated).To(HaveLen(1))
		Expect(snap.InFlight[0].Nominated[0].Name).To(Equal("p"))
		n, ok := h.cluster.NominationOf(key("p"))
		Expect(ok).To(BeTrue())
		Expect(n.NodeName).To(BeEmpty())
		Expect(n.Until.IsZero()).To(BeTrue())
	})

	It("counts the pod on the claim's Node once it exists, and lets the nomination expire after the window", func(ctx context.Context) {
		claim := createNodeClaim(ctx, "pool-a-1", "pool-a", "", nil)
		pod := createPod(ctx, "p", "", "1", "1Gi", 0)
		h.sync(ctx, claim, pod)
		h.cluster.Nominate(pod, state.Target{NodeClaim: claim.Name})
		claim.Status.ProviderID = "aws:///zone-a/i-1"
		claim.Status.Capacity, claim.Status.Allocatable = resources("4", "16Gi"), resources("4", "16Gi")
		Expect(env.Client.Status().Update(ctx, claim)).To(Succeed())
		node := createNode(ctx, "node-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi"))
		h.sync(ctx, claim, node)

		snap := h.cluster.Snapshot()
		Expect(snap.InFlight).To(BeEmpty())
		Expect(stateNode(snap, "node-1").Nominated).To(HaveLen(1))
		n, ok := h.cluster.NominationOf(key("p"))
		Expect(ok).To(BeTrue())
		Expect(n.NodeName).To(Equal("node-1"))
		// Until the claim is Registered, registration holds the Node (the kube-scheduler cannot place the pod
		// there yet): the nomination holds as for a claim in flight, however long that takes.
		Expect(n.Until.IsZero()).To(BeTrue())
		h.clock.Step(time.Hour)
		Expect(stateNode(h.cluster.Snapshot(), "node-1").Nominated).To(HaveLen(1))

		// The window counts from the latest of the nomination, the Node appearing (the API server's clock)
		// and the claim's registration.
		registered := metav1.NewTime(h.clock.Now().Add(time.Hour).Truncate(time.Second))
		claim.Status.Conditions = []metav1.Condition{{Type: v1.ConditionTypeRegistered, Status: metav1.ConditionTrue,
			Reason: v1.ConditionTypeRegistered, LastTransitionTime: registered}}
		Expect(env.Client.Status().Update(ctx, claim)).To(Succeed())
		h.sync(ctx, claim)
		n, ok = h.cluster.NominationOf(key("p"))
		Expect(ok).To(BeTrue())
		Expect(n.Until).To(BeTemporally("==", registered.Add(state.MinNominationWindow)))

		h.clock.SetTime(n.Until.Add(-time.Millisecond))
		Expect(stateNode(h.cluster.Snapshot(), "node-1").Nominated).To(HaveLen(1))
		h.clock.SetTime(n.Until)
		Expect(stateNode(h.cluster.Snapshot(), "node-1").Nominated).To(BeEmpty())
		_, ok = h.cluster.NominationOf(key("p"))
		Expect(ok).To(BeFalse())
	})

	It("ends a nomination the kube-scheduler rejected, only if it still names that Node", func(ctx context.Context) {
		claim := createNodeClaim(ctx, "pool-a-1", "pool-a", "", nil)
		pod := createPod(ctx, "p", "", "1", "1Gi", 0)
		h.sync(ctx, claim, pod)
		h.cluster.Nominate(pod, state.Target{NodeClaim: claim.Name})
		Expect(h.cluster.Reject(key("p"), "node-1")).To(BeFalse(), "the claim has no Node yet")
		claim.Status.ProviderID = "aws:///zone-a/i-1"
		claim.Status.Capacity, claim.Status.Allocatable = resources("4", "16Gi"), resources("4", "16Gi")
		Expect(env.Client.Status().Update(ctx, claim)).To(Succeed())
		node := createNode(ctx, "node-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi"))
		h.sync(ctx, claim, node)

		Expect(h.cluster.Reject(key("p"), "node-2")).To(BeFalse())
		_, ok := h.cluster.NominationOf(key("p"))
		Expect(ok).To(BeTrue())
		Expect(h.cluster.Reject(key("p"), "node-1")).To(BeTrue())
		_, ok = h.cluster.NominationOf(key("p"))
		Expect(ok).To(BeFalse())
		Expect(stateNode(h.cluster.Snapshot(), "node-1").Nominated).To(BeEmpty())
	})

	It("drops the nomination when the NodeClaim is gone or marked for deletion", func(ctx context.Context) {
		gone := createNodeClaim(ctx, "pool-a-1", "pool-a", "", nil)
		marked := createNodeClaim(ctx, "pool-a-2", "pool-a", "aws:///zone-a/i-2", resources("4", "16Gi"))
		a, b := createPod(ctx, "a", "", "1", "1Gi", 0), createPod(ctx, "b", "", "1", "1Gi", 0)
		h.sync(ctx, gone, marked, a, b)
		h.cluster.Nominate(a, state.Target{NodeClaim: gone.Name})
		h.cluster.Nominate(b, state.Target{NodeClaim: marked.Name})
		Expect(h.cluster.Nominations()).To(HaveLen(2))

		Expect(env.Client.Delete(ctx, gone)).To(Succeed())
		h.sync(ctx, gone)
		h.cluster.Deletions.Mark("aws:///zone-a/i-2")
		Expect(h.cluster.Nominations()).To(BeEmpty())
		for _, f := range h.cluster.Snapshot().InFlight {
			Expect(f.Nominated).To(BeEmpty())
		}
	})

	It("forgets the nomination once the pod is bound or deleted", func(ctx context.Context) {
		claim := createNodeClaim(ctx, "pool-a-1", "pool-a", "", nil)
		bound, deleted := createPod(ctx, "bound", "", "1", "1Gi", 0), createPod(ctx, "deleted", "", "1", "1Gi", 0)
		h.sync(ctx, claim, bound, deleted)
		h.cluster.Nominate(bound, state.Target{NodeClaim: claim.Name})
		h.cluster.Nominate(deleted, state.Target{NodeClaim: claim.Name})
		h.sync(ctx, bound) // a pending pod's update keeps its nomination
		Expect(h.cluster.Nominations()).To(HaveLen(2))

		stamp := h.cluster.ChangeStamp()
		bindPod(ctx, bound, createNode(ctx, "elsewhere", "", "aws:///zone-a/i-9", resources("4", "16Gi")))
		Expect(env.Client.Delete(ctx, deleted, zeroGracePeriod())).To(Succeed())
		h.sync(ctx, bound, deleted)
		Expect(h.cluster.Nominations()).To(BeEmpty())
		Expect(h.cluster.ChangeStamp()).To(BeNumerically(">", stamp))
	})

	It("does not nominate a pod it has seen bound since the pass read it", func(ctx context.Context) {
		node := createNode(ctx, "node-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi"))
		other := createNode(ctx, "node-2", "pool-a", "aws:///zone-a/i-2", resources("4", "16Gi"))
		pod := createPod(ctx, "p", "", "1", "1Gi", 0)
		h.sync(ctx, node, other, pod)
		read := pod.DeepCopy() // what a provisioning pass planned with
		bindPod(ctx, pod, node)
		h.sync(ctx, pod)
		h.cluster.Nominate(read, state.Target{Node: "node-2"})
		Expect(h.cluster.Nominations()).To(BeEmpty(), "the pod would hold room on node-2 as well as on node-1")
		Expect(stateNode(h.cluster.Snapshot(), "node-2").Nominated).To(BeEmpty())
	})

	It("keeps the hint it saw on a pod whose nomination moves to the Node of its NodeClaim", func(ctx context.Context) {
		claim := createNodeClaim(ctx, "pool-a-1", "pool-a", "", nil)
		pod := createPod(ctx, "p", "", "1", "1Gi", 0)
		h.sync(ctx, claim, pod)
		read := pod.DeepCopy() // the pass's copy, from before the hint was written
		h.cluster.Nominate(read, state.Target{NodeClaim: claim.Name})
		claim.Status.ProviderID = "aws:///zone-a/i-1"
		claim.Status.Capacity, claim.Status.Allocatable = resources("4", "16Gi"), resources("4", "16Gi")
		claim.Status.Conditions = []metav1.Condition{{Type: v1.ConditionTypeRegistered, Status: metav1.ConditionTrue,
			Reason: v1.ConditionTypeRegistered, LastTransitionTime: metav1.NewTime(h.clock.Now().Add(-time.Hour))}}
		Expect(env.Client.Status().Update(ctx, claim)).To(Succeed())
		node := createNode(ctx, "node-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi"))
		pod.Status.NominatedNodeName = node.Name
		Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
		h.sync(ctx, claim, node, pod)

		// A later pass keeps the pod in place, now on the claim's Node, with the copy it had of the pod.
		h.cluster.Nominate(read, state.Target{Node: node.Name})
		n, ok := h.cluster.NominationOf(key("p"))
		Expect(ok).To(BeTrue())
		Expect(n.Until).To(Equal(h.clock.Now().Add(state.HintedWindowFactor*state.MinNominationWindow)),
			"the hint names the Node: the nomination holds the longer window")
	})

	It("starts the window when the Node becomes Ready", func(ctx context.Context) {
		node := createNode(ctx, "node-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi"))
		ready := metav1.NewTime(h.clock.Now().Add(time.Hour).Truncate(time.Second))
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: ready}}
		Expect(env.Client.Status().Update(ctx, node)).To(Succeed())
		pod := createPod(ctx, "p", "", "1", "1Gi", 0)
		h.sync(ctx, node, pod)
		h.cluster.Nominate(pod, state.Target{Node: node.Name})
		n, ok := h.cluster.NominationOf(key("p"))
		Expect(ok).To(BeTrue())
		Expect(n.Until).To(BeTemporally("==", ready.Add(state.MinNominationWindow)))
	})

	It("holds a nomination to an existing Node for the window from when it was made", func(ctx context.Context) {
		node := createNode(ctx, "node-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi"))
		pod := createPod(ctx, "p", "", "1", "1Gi", 0)
		h.sync(ctx, node, pod)
		h.clock.Step(time.Minute) // well after the Node appeared
		h.cluster.Nominate(pod, state.Target{Node: node.Name})
		n, ok := h.cluster.NominationOf(key("p"))
		Expect(ok).To(BeTrue())
		Expect(n.Until).To(Equal(h.clock.Now().Add(state.MinNominationWindow)))
		h.clock.Step(state.MinNominationWindow)
		Expect(h.cluster.Nominations()).To(BeEmpty())
	})

	It("holds a nomination longer while the pod's hint names its Node", func(ctx context.Context) {
		node := createNode(ctx, "node-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi"))
		hinted, other := createPod(ctx, "hinted", "", "1", "1Gi", 0), createPod(ctx, "other", "", "1", "1Gi", 0)
		h.sync(ctx, node, hinted, other)
		h.clock.Step(time.Minute)
		start := h.clock.Now()
		h.cluster.Nominate(hinted, state.Target{Node: node.Name})
		h.cluster.Nominate(other, state.Target{Node: node.Name})

		stamp := h.cluster.ChangeStamp()
		hinted.Status.NominatedNodeName = node.Name
		Expect(env.Client.Status().Update(ctx, hinted)).To(Succeed())
		other.Status.NominatedNodeName = "node-2" // a hint naming another Node does not count
		Expect(env.Client.Status().Update(ctx, other)).To(Succeed())
		h.sync(ctx, hinted, other)
		Expect(h.cluster.ChangeStamp()).To(BeNumerically(">", stamp), "how long a nomination holds changed")
		n, ok := h.cluster.NominationOf(key("hinted"))
		Expect(ok).To(BeTrue())
		Expect(n.Until).To(Equal(start.Add(state.HintedWindowFactor * state.MinNominationWindow)))

		h.clock.Step(state.MinNominationWindow)
		_, ok = h.cluster.NominationOf(key("other"))
		Expect(ok).To(BeFalse())
		Expect(stateNode(h.cluster.Snapshot(), "node-1").Nominated).To(HaveLen(1))

		// The kube-scheduler tried the pod and cleared the hint: the window has passed, the nomination ends.
		hinted.Status.NominatedNodeName = ""
		Expect(env.Client.Status().Update(ctx, hinted)).To(Succeed())
		h.sync(ctx, hinted)
		_, ok = h.cluster.NominationOf(key("hinted"))
		Expect(ok).To(BeFalse())

		// Put back, it holds again until the longer window ends, and not after.
		hinted.Status.NominatedNodeName = node.Name
		Expect(env.Client.Status().Update(ctx, hinted)).To(Succeed())
		h.sync(ctx, hinted)
		Expect(h.cluster.Nominations()).To(HaveLen(1))
		h.clock.SetTime(start.Add(state.HintedWindowFactor * state.MinNominationWindow))
		Expect(h.cluster.Nominations()).To(BeEmpty())
	})
})

var _ = Describe("NominationWindow", func() {
	It("is twice the longest batch, at least 10 s, as Karpenter's", func() {
		Expect(state.NominationWindow(10 * time.Second)).To(Equal(20 * time.Second))
		Expect(state.NominationWindow(time.Second)).To(Equal(10 * time.Second))
	})
})

// bindPod binds the pod to the node through the binding subresource, as the kube-scheduler does.
func bindPod(ctx context.Context, pod *corev1.Pod, node *corev1.Node) {
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target: corev1.ObjectReference{Kind: "Node", Name: node.Name}}
	Expect(env.Client.SubResource("binding").Create(ctx, pod, binding)).To(Succeed())
}

var _ = Describe("Nomination changes", func() {
	It("announces a pod whose nomination changed, once", func(ctx context.Context) {
		h := newHarness()
		DeferCleanup(cleanUp)
		claim := createNodeClaim(ctx, "pool-a-1", "pool-a", "", nil)
		pod := createPod(ctx, "p", "", "1", "1Gi", 0)
		h.sync(ctx, claim, pod)
		h.cluster.Nominate(pod, state.Target{NodeClaim: claim.Name})
		h.cluster.Nominate(pod, state.Target{NodeClaim: claim.Name})
		Expect(h.cluster.NominationChanges()).To(Receive(WithTransform(func(e event.GenericEvent) string { return e.Object.GetName() }, Equal("p"))))
		Expect(h.cluster.NominationChanges()).NotTo(Receive())
	})
})
