package state_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lathe-autoscaler/lathe/pkg/state"
)

var _ = Describe("Pods", func() {
	var h *harness

	BeforeEach(func(ctx context.Context) {
		h = newHarness()
		h.sync(ctx,
			createNode(ctx, "node-a", "pool-a", "aws:///zone-a/i-a", resources("4", "16Gi")),
			createNode(ctx, "node-b", "pool-a", "aws:///zone-a/i-b", resources("4", "16Gi")),
		)
	})
	AfterEach(func(ctx context.Context) { cleanUp(ctx) })

	It("sums the requests of the pods bound to each node", func(ctx context.Context) {
		h.sync(ctx,
			createPod(ctx, "a-1", "node-a", "500m", "1Gi", 0),
			createPod(ctx, "a-2", "node-a", "250m", "512Mi", 0),
			createPod(ctx, "b-1", "node-b", "1", "2Gi", 0),
			createPod(ctx, "pending", "", "3", "1Gi", 0),
		)
		snap := h.cluster.Snapshot()
		a, b := stateNode(snap, "node-a"), stateNode(snap, "node-b")
		Expect(a.Requested.Cpu().Cmp(quantity("750m"))).To(Equal(0))
		Expect(a.Requested.Memory().Cmp(quantity("1536Mi"))).To(Equal(0))
		Expect(a.Requested.Pods().Value()).To(Equal(int64(2)))
		Expect(a.Pods).To(HaveLen(2))
		Expect(a.Pods[0].Name).To(Equal("a-1"))
		Expect(b.Requested.Cpu().Cmp(quantity("1"))).To(Equal(0))
		Expect(h.cluster.Pods.PodCount()).To(Equal(3))
		requested := h.cluster.Pods.Requested("node-b")
		Expect(requested.Cpu().Cmp(quantity("1"))).To(Equal(0))
	})

	It("records the host ports bound pods hold", func(ctx context.Context) {
		h.sync(ctx, createPod(ctx, "web", "node-a", "100m", "128Mi", 443))
		a := stateNode(h.cluster.Snapshot(), "node-a")
		Expect(a.HostPorts).To(ConsistOf(state.HostPort{Protocol: corev1.ProtocolTCP, Port: 443}))
	})

	It("counts daemonset pods apart", func(ctx context.Context) {
		isController := true
		p := createPod(ctx, "agent-x", "node-a", "100m", "64Mi", 0)
		p.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "0b3c4a2e-0000-4000-8000-000000000001", Controller: &isController,
		}}
		Expect(env.Client.Update(ctx, p)).To(Succeed())
		h.sync(ctx, p, createPod(ctx, "app", "node-a", "1", "1Gi", 0))
		a := stateNode(h.cluster.Snapshot(), "node-a")
		Expect(a.DaemonSetRequested.Cpu().Cmp(quantity("100m"))).To(Equal(0))
		Expect(a.Requested.Cpu().Cmp(quantity("1100m"))).To(Equal(0))
	})

	It("forgets pods that are deleted or have finished", func(ctx context.Context) {
		gone := createPod(ctx, "gone", "node-a", "1", "1Gi", 0)
		done := createPod(ctx, "done", "node-a", "1", "1Gi", 0)
		stays := createPod(ctx, "stays", "node-a", "1", "1Gi", 0)
		h.sync(ctx, gone, done, stays)
		Expect(stateNode(h.cluster.Snapshot(), "node-a").Pods).To(HaveLen(3))

		Expect(env.Client.Delete(ctx, gone, zeroGracePeriod())).To(Succeed())
		done.Status.Phase = corev1.PodSucceeded
		Expect(env.Client.Status().Update(ctx, done)).To(Succeed())
		h.sync(ctx, gone, done)

		a := stateNode(h.cluster.Snapshot(), "node-a")
		Expect(a.Pods).To(HaveLen(1))
		Expect(a.Pods[0].Name).To(Equal("stays"))
		Expect(a.Requested.Cpu().Cmp(quantity("1"))).To(Equal(0))
	})
})
