package state_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
)

var _ = Describe("Synced", func() {
	var h *harness

	BeforeEach(func() { h = newHarness() })
	AfterEach(func(ctx context.Context) { cleanUp(ctx) })

	It("is true only once the stores hold every NodeClaim and Node under its provider ID", func(ctx context.Context) {
		Expect(h.cluster.Synced(ctx)).To(BeTrue())
		Expect(gauge(h.registry, "karpenter_cluster_state_synced")).To(Equal(1.0))

		nc := createNodeClaim(ctx, "pool-a-1", "pool-a", "", nil)
		Expect(h.cluster.Synced(ctx)).To(BeFalse())
		Expect(gauge(h.registry, "karpenter_cluster_state_synced")).To(Equal(0.0))
		h.sync(ctx, nc)
		Expect(h.cluster.Synced(ctx)).To(BeTrue())

		// The NodeClaim launched, but the store has not seen its provider ID yet.
		nc.Status.ProviderID = "aws:///zone-a/i-1"
		Expect(env.Client.Status().Update(ctx, nc)).To(Succeed())
		Expect(h.cluster.Synced(ctx)).To(BeFalse())
		h.sync(ctx, nc)
		Expect(h.cluster.Synced(ctx)).To(BeTrue())

		n := createNode(ctx, "node-1", "pool-a", "aws:///zone-a/i-1", resources("2", "8Gi"))
		Expect(h.cluster.Synced(ctx)).To(BeFalse())
		h.sync(ctx, n)
		Expect(h.cluster.Synced(ctx)).To(BeTrue())
		Expect(gauge(h.registry, "karpenter_cluster_state_node_count")).To(Equal(1.0))
	})

	It("reports how long the state has been unsynced", func(ctx context.Context) {
		Expect(h.cluster.Synced(ctx)).To(BeTrue())
		createNode(ctx, "node-1", "", "aws:///zone-a/i-1", resources("2", "8Gi"))
		h.clock.Step(30 * time.Second)
		Expect(h.cluster.Synced(ctx)).To(BeFalse())
		Expect(gauge(h.registry, "karpenter_cluster_state_unsynced_time_seconds")).To(Equal(30.0))
	})
})

// gauge returns the value of the unlabelled gauge with the name.
func gauge(reg *prometheus.Registry, name string) float64 {
	GinkgoHelper()
	families, err := reg.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	Fail("no metric " + name)
	return 0
}
