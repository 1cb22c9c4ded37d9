package sim_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
)

var _ = Describe("Interruption on demand", func() {
	var (
		clock      *clocktesting.FakeClock
		provider   *sim.CloudProvider
		controller *sim.InterruptionController
	)

	BeforeEach(func() {
		clock, provider = newProvider()
		controller = sim.NewInterruptionController(provider, env.Client, clock)
	})
	AfterEach(func(ctx SpecContext) { cleanUp(ctx) })

	// interrupt launches a spot instance and annotates its Node with the interruption kind.
	interrupt := func(ctx SpecContext, name string, kind sim.InterruptionKind) *v1.NodeClaim {
		launched, err := provider.Create(ctx, nodeClaim(name, in(v1.LabelInstanceType, "m5.large"),
			in(v1.CapacityTypeLabelKey, v1.CapacityTypeSpot), in(v1.LabelTopologyZone, "us-east-1c")))
		Expect(err).NotTo(HaveOccurred())
		node := getNode(ctx, name)
		patch := client.MergeFrom(node.DeepCopy())
		node.Annotations[sim.InterruptAnnotationKey] = string(kind)
		Expect(env.Client.Patch(ctx, node, patch)).To(Succeed())
		return launched
	}
	reconcileNode := func(ctx SpecContext, name string) reconcile.Result {
		result, err := controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
		Expect(err).NotTo(HaveOccurred())
		return result
	}

	It("raises a spot interruption once and reclaims the instance two minutes later", func(ctx SpecContext) {
		launched := interrupt(ctx, "spot", sim.InterruptionSpot)
		Expect(reconcileNode(ctx, "spot").RequeueAfter).To(Equal(sim.SpotInterruptionNotice))
		got := provider.Interruptions()
		Expect(got).To(HaveLen(1))
		Expect(got[0].Kind).To(Equal(sim.InterruptionSpot))
		Expect(got[0].ProviderID).To(Equal(launched.Status.ProviderID))
		Expect(getNode(ctx, "spot").Annotations).To(HaveKey(sim.InterruptedAnnotationKey))

		clock.Step(time.Minute)
		Expect(reconcileNode(ctx, "spot").RequeueAfter).To(Equal(time.Minute))
		Expect(provider.Interruptions()).To(BeEmpty(), "raised once")
		_, err := provider.Get(ctx, launched.Status.ProviderID)
		Expect(err).NotTo(HaveOccurred(), "still running during the notice")

		clock.Step(time.Minute)
		Expect(reconcileNode(ctx, "spot")).To(BeZero())
		expectNoNode(ctx, "spot")
		_, err = provider.Get(ctx, launched.Status.ProviderID)
		Expect(cloudprovider.IsNodeClaimNotFoundError(err)).To(BeTrue(), "got %v", err)
	})

	It("terminates an instance at once on a termination", func(ctx SpecContext) {
		interrupt(ctx, "terminated", sim.InterruptionTerminating)
		Expect(reconcileNode(ctx, "terminated")).To(BeZero())
		Expect(provider.Interruptions()).To(HaveLen(1))
		expectNoNode(ctx, "terminated")
	})

	It("only warns on a rebalance recommendation", func(ctx SpecContext) {
		interrupt(ctx, "rebalance", sim.InterruptionRebalance)
		Expect(reconcileNode(ctx, "rebalance")).To(BeZero())
		Expect(provider.Interruptions()).To(HaveLen(1))
		clock.Step(time.Hour)
		Expect(reconcileNode(ctx, "rebalance")).To(BeZero())
		Expect(getNode(ctx, "rebalance").DeletionTimestamp).To(BeNil())
	})

	It("ignores an unknown kind", func(ctx SpecContext) {
		interrupt(ctx, "unknown", "meteor_strike")
		Expect(reconcileNode(ctx, "unknown")).To(BeZero())
		Expect(provider.Interruptions()).To(BeEmpty())
		node := getNode(ctx, "unknown")
		Expect(node.Annotations).NotTo(HaveKey(sim.InterruptedAnnotationKey))
		Expect(node.DeletionTimestamp).To(BeNil())
	})

	It("ignores a node that is no simulated instance", func(ctx SpecContext) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "foreign", Annotations: map[string]string{sim.InterruptAnnotationKey: string(sim.InterruptionTerminating)}},
			Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-0123456789abcdef0"}}
		Expect(env.Client.Create(ctx, node)).To(Succeed())
		Expect(reconcileNode(ctx, "foreign")).To(BeZero())
		Expect(provider.Interruptions()).To(BeEmpty())
		Expect(getNode(ctx, "foreign").DeletionTimestamp).To(BeNil())
	})
})
