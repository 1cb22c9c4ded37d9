package sim_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
)

var _ = Describe("Interruption messages and drift through the provider boundary", func() {
	var (
		clock    *clocktesting.FakeClock
		provider *sim.CloudProvider
	)

	BeforeEach(func() { clock, provider = newProvider() })
	AfterEach(func(ctx SpecContext) { cleanUp(ctx) })

	It("hands out a message until it is deleted", func(ctx SpecContext) {
		launched, err := provider.Create(ctx, nodeClaim("queued", in(v1.CapacityTypeLabelKey, v1.CapacityTypeSpot)))
		Expect(err).NotTo(HaveOccurred())
		Expect(provider.Interrupt(ctx, launched.Status.ProviderID, sim.InterruptionSpot)).To(Succeed())
		Expect(provider.Interrupt(ctx, launched.Status.ProviderID, sim.InterruptionRebalance)).To(Succeed())

		var source cloudprovider.InterruptionSource = provider
		got, err := source.ReceiveInterruptions(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(HaveLen(2))
		Expect(got[0]).To(And(HaveField("Kind", cloudprovider.InterruptionSpot), HaveField("ProviderID", launched.Status.ProviderID),
			HaveField("Time", clock.Now())))
		Expect(got[0].ID).NotTo(Equal(got[1].ID))

		again, err := source.ReceiveInterruptions(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(got), "not deleted yet")

		Expect(source.DeleteInterruption(ctx, got[0].ID)).To(Succeed())
		left, err := source.ReceiveInterruptions(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(left).To(ConsistOf(HaveField("Kind", cloudprovider.InterruptionRebalance)))
	})

	It("reports drift named by the instance's drift annotation", func(ctx SpecContext) {
		launched, err := provider.Create(ctx, nodeClaim("drifty"))
		Expect(err).NotTo(HaveOccurred())
		Expect(provider.IsDrifted(ctx, launched)).To(BeEmpty())

		node := getNode(ctx, "drifty")
		patch := client.MergeFrom(node.DeepCopy())
		node.Annotations[sim.DriftAnnotationKey] = "AMIDrift"
		Expect(env.Client.Patch(ctx, node, patch)).To(Succeed())
		Expect(provider.IsDrifted(ctx, launched)).To(Equal(cloudprovider.DriftReason("AMIDrift")))

		Expect(provider.Delete(ctx, launched)).To(Succeed())
		_, err = provider.IsDrifted(ctx, launched)
		Expect(cloudprovider.IsNodeClaimNotFoundError(err)).To(BeTrue(), "got %v", err)
	})
})
