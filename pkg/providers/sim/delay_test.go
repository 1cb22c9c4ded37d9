package sim_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
)

var _ = Describe("Launch delay", func() {
	var (
		clock    *clocktesting.FakeClock
		provider *sim.CloudProvider
	)

	BeforeEach(func() {
		clock, provider = newProvider(func(d *sim.Deps) { d.LaunchDelay = 30 * time.Second })
	})
	AfterEach(func(ctx SpecContext) { cleanUp(ctx) })

	It("makes the Node appear after the delay, the instance being visible meanwhile", func(ctx SpecContext) {
		nc := nodeClaim("booting", in(v1.LabelInstanceType, "m5.large"))
		out, err := provider.Create(ctx, nc)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Status.ProviderID).To(HavePrefix("sim:///"))
		expectNoNode(ctx, "booting")

		got, err := provider.Get(ctx, out.Status.ProviderID)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Name).To(Equal("booting"))
		list, err := provider.List(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(list).To(HaveLen(1))
		again, err := provider.Create(ctx, nc)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Status.ProviderID).To(Equal(out.Status.ProviderID))

		clock.Step(30 * time.Second)
		node := getNode(ctx, "booting")
		Expect(node.Spec.ProviderID).To(Equal(out.Status.ProviderID))
		expectSameResources(node.Status.Allocatable, catalogType("m5.large").Allocatable())
	})

	It("cancels a launch whose Node hasn't appeared yet", func(ctx SpecContext) {
		out, err := provider.Create(ctx, nodeClaim("cancelled", in(v1.LabelInstanceType, "m5.large")))
		Expect(err).NotTo(HaveOccurred())
		Expect(provider.Delete(ctx, out)).To(Succeed())
		clock.Step(time.Minute)
		expectNoNode(ctx, "cancelled")
		Expect(cloudprovider.IsNodeClaimNotFoundError(provider.Delete(ctx, out))).To(BeTrue())
	})
})

var _ = Describe("Interruption", func() {
	var (
		clock    *clocktesting.FakeClock
		provider *sim.CloudProvider
	)

	BeforeEach(func() {
		clock, provider = newProvider()
	})
	AfterEach(func(ctx SpecContext) { cleanUp(ctx) })

	It("hands out each interruption once and marks a spot-interrupted offering unavailable", func(ctx SpecContext) {
		out, err := provider.Create(ctx, nodeClaim("interrupted", in(v1.LabelInstanceType, "m5.large"),
			in(v1.CapacityTypeLabelKey, v1.CapacityTypeSpot), in(v1.LabelTopologyZone, "us-east-1c")))
		Expect(err).NotTo(HaveOccurred())
		Expect(provider.Interrupt(ctx, out.Status.ProviderID, sim.InterruptionRebalance)).To(Succeed())
		Expect(offeringAvailable(ctx, provider, "m5.large", "us-east-1c", v1.CapacityTypeSpot)).To(BeTrue())
		Expect(provider.Interrupt(ctx, out.Status.ProviderID, sim.InterruptionSpot)).To(Succeed())
		Expect(offeringAvailable(ctx, provider, "m5.large", "us-east-1c", v1.CapacityTypeSpot)).To(BeFalse())

		got := provider.Interruptions()
		Expect(got).To(HaveLen(2))
		Expect(got[0].Kind).To(Equal(sim.InterruptionRebalance))
		Expect(got[1]).To(Equal(sim.Interruption{
			Kind: sim.InterruptionSpot, ProviderID: out.Status.ProviderID, NodeClaim: "interrupted",
			InstanceType: "m5.large", Zone: "us-east-1c", CapacityType: v1.CapacityTypeSpot, Time: clock.Now(),
		}))
		Expect(provider.Interruptions()).To(BeEmpty())
	})

	It("refuses to interrupt an unknown instance", func(ctx SpecContext) {
		err := provider.Interrupt(ctx, "sim:///us-east-1a/i-0123456789abcdef0", sim.InterruptionScheduledChange)
		Expect(cloudprovider.IsNodeClaimNotFoundError(err)).To(BeTrue(), "got %v", err)
	})
})
