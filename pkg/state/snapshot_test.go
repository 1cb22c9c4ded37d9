package state_test

import (
	"context"
	"fmt"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/prometheus/client_golang/prometheus"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

var _ = Describe("Snapshot", func() {
	var h *harness

	BeforeEach(func() { h = newHarness() })
	AfterEach(func(ctx context.Context) { cleanUp(ctx) })

	It("is a deep copy that readers may modify", func(ctx context.Context) {
		nc := createNodeClaim(ctx, "pool-a-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi"))
		n := createNode(ctx, "node-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi"))
		inflight := createNodeClaim(ctx, "pool-a-2", "pool-a", "", nil)
		h.sync(ctx, nc, n, inflight, createPod(ctx, "p", "node-1", "1", "1Gi", 0), createDaemonSet(ctx, "agent", "100m"))

		first := h.cluster.Snapshot()
		sn := first.Nodes[0]
		sn.Node.Labels["mutated"] = "true"
		sn.Labels["also"] = "true"
		sn.NodeClaim.Labels[v1.NodePoolLabelKey] = "other"
		sn.Allocatable[corev1.ResourceCPU] = quantity("100")
		sn.Requested[corev1.ResourceCPU] = quantity("100")
		sn.Pods[0].Spec.NodeName = "elsewhere"
		first.InFlight[0].Requirements[0].Values[0] = "arm64"
		first.InFlight[0].Requests[corev1.ResourceCPU] = quantity("100")
		first.DaemonSets[0].Spec.Template.Spec.Containers[0].Name = "mutated"
		first.NodePoolUsage["pool-a"][corev1.ResourceCPU] = quantity("100")

		second := h.cluster.Snapshot()
		sn = second.Nodes[0]
		Expect(sn.Node.Labels).NotTo(HaveKey("mutated"))
		Expect(sn.Labels).NotTo(HaveKey("also"))
		Expect(sn.NodeClaim.Labels).To(HaveKeyWithValue(v1.NodePoolLabelKey, "pool-a"))
		Expect(sn.Allocatable.Cpu().String()).To(Equal("4"))
		Expect(sn.Requested.Cpu().String()).To(Equal("1"))
		Expect(sn.Pods[0].Spec.NodeName).To(Equal("node-1"))
		Expect(second.InFlight[0].Requirements[0].Values).To(Equal([]string{"amd64"}))
		Expect(second.InFlight[0].Requests.Cpu().String()).To(Equal("1"))
		Expect(second.DaemonSets[0].Spec.Template.Spec.Containers[0].Name).To(Equal("agent"))
		usage := second.NodePoolUsage["pool-a"]
		Expect(usage.Cpu().String()).To(Equal("5"))
	})

	It("sums each NodePool's capacity, in-flight claims included", func(ctx context.Context) {
		h.sync(ctx,
			createNodeClaim(ctx, "pool-a-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi")),
			createNode(ctx, "node-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi")),
			createNodeClaim(ctx, "pool-a-2", "pool-a", "aws:///zone-a/i-2", resources("2", "8Gi")),
			createNodeClaim(ctx, "pool-a-3", "pool-a", "", nil),
			createNodeClaim(ctx, "pool-b-1", "pool-b", "aws:///zone-a/i-3", resources("8", "32Gi")),
		)
		usage := h.cluster.Snapshot().NodePoolUsage
		Expect(usage).To(HaveLen(2))
		poolA := usage["pool-a"]
		Expect(poolA.Cpu().String()).To(Equal("7"))
		Expect(poolA.Memory().String()).To(Equal("25Gi"))
		nodes := poolA["nodes"]
		Expect(nodes.Value()).To(Equal(int64(3)))
		Expect(usage).To(HaveKey("pool-b"))
		poolB := h.cluster.Nodes.NodePoolUsage("pool-b")
		Expect(poolB.Cpu().String()).To(Equal("8"))
	})

	It("holds daemonsets and PodDisruptionBudgets until they are deleted", func(ctx context.Context) {
		ds := createDaemonSet(ctx, "agent", "100m")
		pdb := createPDB(ctx, "web")
		h.sync(ctx, ds, pdb)
		snap := h.cluster.Snapshot()
		Expect(snap.DaemonSets).To(HaveLen(1))
		Expect(snap.PDBs).To(HaveLen(1))
		pod := state.DaemonSetPod(snap.DaemonSets[0])
		Expect(pod.Spec.Containers[0].Resources.Requests.Cpu().String()).To(Equal("100m"))
		Expect(pod.Labels).To(HaveKeyWithValue("app", "agent"))

		Expect(env.Client.Delete(ctx, ds)).To(Succeed())
		Expect(env.Client.Delete(ctx, pdb)).To(Succeed())
		h.sync(ctx, ds, pdb)
		snap = h.cluster.Snapshot()
		Expect(snap.DaemonSets).To(BeEmpty())
		Expect(snap.PDBs).To(BeEmpty())
	})
})

var _ = Describe("Change stamp", func() {
	var h *harness

	BeforeEach(func() { h = newHarness() })
	AfterEach(func(ctx context.Context) { cleanUp(ctx) })

	It("grows with every relevant change and only then", func(ctx context.Context) {
		stamp := h.cluster.ChangeStamp()
		expectBump := func() {
			GinkgoHelper()
			Expect(h.cluster.ChangeStamp()).To(BeNumerically(">", stamp))
			stamp = h.cluster.ChangeStamp()
		}
		expectSame := func() {
			GinkgoHelper()
			Expect(h.cluster.ChangeStamp()).To(Equal(stamp))
		}

		n := createNode(ctx, "node-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi"))
		h.sync(ctx, n)
		expectBump()
		h.sync(ctx, n)
		expectSame()

		// A kubelet heartbeat is not a scheduling change.
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: metav1.Now()}}
		Expect(env.Client.Status().Update(ctx, n)).To(Succeed())
		h.sync(ctx, n)
		expectSame()

		n.Spec.Taints = []corev1.Taint{v1.DisruptedNoScheduleTaint}
		Expect(env.Client.Update(ctx, n)).To(Succeed())
		h.sync(ctx, n)
		expectBump()

		h.sync(ctx, createNodeClaim(ctx, "pool-a-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi")))
		expectBump()
		p := createPod(ctx, "p", "node-1", "1", "1Gi", 0)
		h.sync(ctx, p)
		expectBump()
		h.sync(ctx, createDaemonSet(ctx, "agent", "100m"))
		expectBump()
		h.sync(ctx, createPDB(ctx, "web"))
		expectBump()
		h.cluster.Deletions.Mark("aws:///zone-a/i-1")
		expectBump()
		h.cluster.Deletions.Mark("aws:///zone-a/i-1")
		expectSame()
		Expect(env.Client.Delete(ctx, p, zeroGracePeriod())).To(Succeed())
		h.sync(ctx, p)
		expectBump()

		Expect(h.cluster.Snapshot().Stamp).To(Equal(stamp))
	})
})

var _ = Describe("Concurrent access", func() {
	It("is race-free while stores are written and snapshots are read", func() {
		c := state.NewCluster(state.Deps{Clock: clocktesting.NewFakeClock(metav1.Now().Time), Registerer: prometheus.NewRegistry()})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range 200 {
					id := fmt.Sprintf("aws:///zone-a/i-%d-%d", w, i%20)
					name := fmt.Sprintf("node-%d-%d", w, i%20)
					c.Nodes.UpdateNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: id}})
					c.Nodes.UpdateNodeClaim(&v1.NodeClaim{
						ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "pool"}},
						Status:     v1.NodeClaimStatus{ProviderID: id, Capacity: resources("2", "4Gi")},
					})
					c.Pods.UpdatePod(&corev1.Pod{
						ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("pod-%d-%d", w, i)},
						Spec:       corev1.PodSpec{NodeName: name},
					})
					c.Deletions.Mark(id)
					if i%3 == 0 {
						c.Nodes.DeleteNode(name)
						c.Pods.DeletePod(types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("pod-%d-%d", w, i-1)})
						c.Deletions.Unmark(id)
					}
				}
			})
		}
		for range 2 {
			wg.Go(func() {
				for range 100 {
					snap := c.Snapshot()
					for _, n := range snap.Nodes {
						n.Labels = map[string]string{"x": "y"}
					}
					_ = c.ChangeStamp()
				}
			})
		}
		wg.Wait()
		nodes := c.Snapshot().NodePoolUsage["pool"]["nodes"]
		Expect(nodes.Value()).To(Equal(int64(80)))
	})
})
