package state_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

var _ = Describe("Nodes and NodeClaims", func() {
	var h *harness

	BeforeEach(func() { h = newHarness() })
	AfterEach(func(ctx context.Context) { cleanUp(ctx) })

	It("joins a Node to its NodeClaim by provider ID", func(ctx context.Context) {
		nc := createNodeClaim(ctx, "pool-a-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi"))
		n := createNode(ctx, "ip-10-0-0-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi"))
		h.sync(ctx, nc, n)

		snap := h.cluster.Snapshot()
		Expect(snap.InFlight).To(BeEmpty())
		Expect(snap.Nodes).To(HaveLen(1))
		sn := snap.Nodes[0]
		Expect(sn.ProviderID).To(Equal("aws:///zone-a/i-1"))
		Expect(sn.Node.Name).To(Equal("ip-10-0-0-1"))
		Expect(sn.NodeClaim).NotTo(BeNil())
		Expect(sn.NodeClaim.Name).To(Equal("pool-a-1"))
		Expect(sn.NodePool).To(Equal("pool-a"))
		Expect(sn.Allocatable.Cpu().String()).To(Equal("4"))
		Expect(sn.Labels).To(HaveKeyWithValue(v1.NodePoolLabelKey, "pool-a"))
		Expect(sn.MarkedForDeletion).To(BeFalse())
	})

	It("keeps a NodeClaim whose Node has not joined as in flight", func(ctx context.Context) {
		nc := createNodeClaim(ctx, "pool-a-2", "pool-a", "aws:///zone-a/i-2", resources("2", "8Gi"))
		h.sync(ctx, nc)

		snap := h.cluster.Snapshot()
		Expect(snap.Nodes).To(BeEmpty())
		Expect(snap.InFlight).To(HaveLen(1))
		f := snap.InFlight[0]
		Expect(f.NodeClaim.Name).To(Equal("pool-a-2"))
		Expect(f.NodePool).To(Equal("pool-a"))
		Expect(f.Requirements).To(HaveLen(1))
		Expect(f.Requirements[0].Key).To(Equal(corev1.LabelArchStable))
		Expect(f.Requests.Cpu().String()).To(Equal("1"))
		Expect(f.Capacity.Cpu().String()).To(Equal("2"))
	})

	It("moves a NodeClaim to its provider ID once launched, without counting it twice", func(ctx context.Context) {
		nc := createNodeClaim(ctx, "pool-a-3", "pool-a", "", nil)
		h.sync(ctx, nc)
		Expect(h.cluster.Snapshot().InFlight).To(HaveLen(1))

		nc.Status.ProviderID = "aws:///zone-a/i-3"
		nc.Status.Capacity = resources("8", "32Gi")
		Expect(env.Client.Status().Update(ctx, nc)).To(Succeed())
		h.sync(ctx, nc)
		snap := h.cluster.Snapshot()
		Expect(snap.InFlight).To(HaveLen(1))
		Expect(snap.InFlight[0].Capacity.Cpu().String()).To(Equal("8"))

		n := createNode(ctx, "ip-10-0-0-3", "pool-a", "aws:///zone-a/i-3", resources("8", "32Gi"))
		h.sync(ctx, n)
		snap = h.cluster.Snapshot()
		Expect(snap.InFlight).To(BeEmpty())
		Expect(snap.Nodes).To(HaveLen(1))
		Expect(snap.Nodes[0].NodeClaim.Name).To(Equal("pool-a-3"))
	})

	It("joins a NodeClaim to its Node by the provider ID its launch returned, before its status shows it", func(ctx context.Context) {
		// Under load the claim's launched status reaches the informer seconds after the launch created the
		// Node: the claim in flight and its Node were then two machines, the Node's room counted twice.
		nc := createNodeClaim(ctx, "pool-a-5", "pool-a", "", nil)
		n := createNode(ctx, "ip-10-0-0-5", "pool-a", "aws:///zone-a/i-5", resources("4", "16Gi"))
		h.sync(ctx, nc, n)
		Expect(h.cluster.Snapshot().InFlight).To(HaveLen(1))
		Expect(h.cluster.Snapshot().Nodes).To(HaveLen(1))

		h.cluster.Nodes.Launched("pool-a-5", "aws:///zone-a/i-5")
		joined := func() {
			snap := h.cluster.Snapshot()
			Expect(snap.InFlight).To(BeEmpty())
			Expect(snap.Nodes).To(HaveLen(1))
			Expect(snap.Nodes[0].NodeClaim).NotTo(BeNil())
			Expect(snap.Nodes[0].NodeClaim.Name).To(Equal("pool-a-5"))
			usage := snap.NodePoolUsage["pool-a"]
			Expect(usage.Cpu().String()).To(Equal("4"), "the machine's capacity, counted once")
		}
		joined()
		Expect(h.cluster.Synced(ctx)).To(BeTrue(), "the claim as the API server still has it is where the store keeps it")

		h.sync(ctx, nc) // a copy older than the launch
		joined()

		nc.Status.ProviderID = "aws:///zone-a/i-5"
		Expect(env.Client.Status().Update(ctx, nc)).To(Succeed())
		h.sync(ctx, nc)
		joined()
	})

	It("joins a NodeClaim launched before the store saw it", func(ctx context.Context) {
		h.cluster.Nodes.Launched("pool-a-6", "aws:///zone-a/i-6")
		nc := createNodeClaim(ctx, "pool-a-6", "pool-a", "", nil)
		n := createNode(ctx, "ip-10-0-0-6", "pool-a", "aws:///zone-a/i-6", resources("4", "16Gi"))
		h.sync(ctx, nc, n)
		snap := h.cluster.Snapshot()
		Expect(snap.InFlight).To(BeEmpty())
		Expect(snap.Nodes).To(HaveLen(1))
		Expect(snap.Nodes[0].NodeClaim.Name).To(Equal("pool-a-6"))
	})

	It("forgets a launch once its NodeClaim is deleted", func(ctx context.Context) {
		h.cluster.Nodes.Launched("pool-a-7", "aws:///zone-a/i-7")
		h.cluster.Nodes.DeleteNodeClaim("pool-a-7")
		nc := createNodeClaim(ctx, "pool-a-7", "pool-a", "", nil) // a new claim of the same name
		n := createNode(ctx, "ip-10-0-0-7", "pool-a", "aws:///zone-a/i-7", resources("4", "16Gi"))
		h.sync(ctx, nc, n)
		snap := h.cluster.Snapshot()
		Expect(snap.InFlight).To(HaveLen(1))
		Expect(snap.Nodes).To(HaveLen(1))
		Expect(snap.Nodes[0].NodeClaim).To(BeNil())
	})

	It("joins a Node that gets its provider ID after it registered", func(ctx context.Context) {
		nc := createNodeClaim(ctx, "pool-a-4", "pool-a", "aws:///zone-a/i-4", resources("2", "8Gi"))
		n := createNode(ctx, "ip-10-0-0-4", "", "", resources("2", "8Gi"))
		h.sync(ctx, nc, n)
		snap := h.cluster.Snapshot()
		Expect(snap.Nodes).To(HaveLen(1))
		Expect(snap.Nodes[0].NodeClaim).To(BeNil())
		Expect(snap.InFlight).To(HaveLen(1))

		n.Spec.ProviderID = "aws:///zone-a/i-4"
		Expect(env.Client.Update(ctx, n)).To(Succeed())
		h.sync(ctx, n)
		snap = h.cluster.Snapshot()
		Expect(snap.InFlight).To(BeEmpty())
		Expect(snap.Nodes).To(HaveLen(1))
		Expect(snap.Nodes[0].NodeClaim.Name).To(Equal("pool-a-4"))
	})

	It("keeps a Node without a NodeClaim as unmanaged", func(ctx context.Context) {
		n := createNode(ctx, "static-1", "", "aws:///zone-a/i-static", resources("2", "8Gi"))
		h.sync(ctx, n)
		snap := h.cluster.Snapshot()
		Expect(snap.Nodes).To(HaveLen(1))
		Expect(snap.Nodes[0].NodeClaim).To(BeNil())
		Expect(snap.Nodes[0].NodePool).To(BeEmpty())
		Expect(snap.NodePoolUsage).To(BeEmpty())
	})

	It("removes Nodes and NodeClaims once they are deleted", func(ctx context.Context) {
		nc := createNodeClaim(ctx, "pool-a-5", "pool-a", "aws:///zone-a/i-5", resources("2", "8Gi"))
		n := createNode(ctx, "ip-10-0-0-5", "pool-a", "aws:///zone-a/i-5", resources("2", "8Gi"))
		h.sync(ctx, nc, n)

		Expect(env.Client.Delete(ctx, n)).To(Succeed())
		h.sync(ctx, n)
		snap := h.cluster.Snapshot()
		Expect(snap.Nodes).To(BeEmpty())
		Expect(snap.InFlight).To(HaveLen(1))
		Expect(h.cluster.Nodes.HasNode(n.Name)).To(BeFalse())

		Expect(env.Client.Delete(ctx, nc)).To(Succeed())
		h.sync(ctx, nc)
		snap = h.cluster.Snapshot()
		Expect(snap.InFlight).To(BeEmpty())
		Expect(h.cluster.Nodes.HasNodeClaim(nc.Name)).To(BeFalse())
	})

	It("reports nodes marked for deletion", func(ctx context.Context) {
		nc := createNodeClaim(ctx, "pool-a-6", "pool-a", "aws:///zone-a/i-6", resources("2", "8Gi"))
		n := createNode(ctx, "ip-10-0-0-6", "pool-a", "aws:///zone-a/i-6", resources("2", "8Gi"))
		h.sync(ctx, nc, n)

		h.cluster.Deletions.Mark("aws:///zone-a/i-6")
		Expect(h.cluster.Deletions.IsMarked("aws:///zone-a/i-6")).To(BeTrue())
		Expect(h.cluster.Snapshot().Nodes[0].MarkedForDeletion).To(BeTrue())

		h.cluster.Deletions.Unmark("aws:///zone-a/i-6")
		Expect(h.cluster.Snapshot().Nodes[0].MarkedForDeletion).To(BeFalse())
	})

	It("reports nodes carrying the disrupted taint (being drained) as marked for deletion", func(ctx context.Context) {
		n := createNode(ctx, "ip-10-0-0-8", "pool-a", "aws:///zone-a/i-8", resources("2", "8Gi"))
		h.sync(ctx, n)
		Expect(h.cluster.Snapshot().Nodes[0].MarkedForDeletion).To(BeFalse())
		n.Spec.Taints = []corev1.Taint{v1.DisruptedNoScheduleTaint}
		Expect(env.Client.Update(ctx, n)).To(Succeed())
		h.sync(ctx, n)
		Expect(h.cluster.Snapshot().Nodes[0].MarkedForDeletion).To(BeTrue())
	})

	It("reports nodes whose NodeClaim is being deleted as marked for deletion", func(ctx context.Context) {
		nc := createNodeClaim(ctx, "pool-a-7", "pool-a", "aws:///zone-a/i-7", resources("2", "8Gi"))
		n := createNode(ctx, "ip-10-0-0-7", "pool-a", "aws:///zone-a/i-7", resources("2", "8Gi"))
		nc.Finalizers = []string{v1.TerminationFinalizer}
		Expect(env.Client.Update(ctx, nc)).To(Succeed())
		Expect(env.Client.Delete(ctx, nc)).To(Succeed())
		h.sync(ctx, nc, n)
		Expect(h.cluster.Snapshot().Nodes[0].MarkedForDeletion).To(BeTrue())

		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(nc), nc)).To(Succeed())
		nc.Finalizers = nil
		Expect(env.Client.Update(ctx, nc)).To(Succeed())
	})
})
