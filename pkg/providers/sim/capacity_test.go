package sim_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
)

var _ = Describe("Insufficient capacity", func() {
	var (
		clock    *clocktesting.FakeClock
		provider *sim.CloudProvider
	)

	BeforeEach(func() {
		clock, provider = newProvider()
	})
	AfterEach(func(ctx SpecContext) { cleanUp(ctx) })

	spotM5 := func(name string, zones ...string) *v1.NodeClaim {
		nc := nodeClaim(name, in(v1.LabelInstanceType, "m5.large"), in(v1.CapacityTypeLabelKey, v1.CapacityTypeSpot))
		if len(zones) > 0 {
			nc.Spec.Requirements = append(nc.Spec.Requirements, in(v1.LabelTopologyZone, zones...))
		}
		return nc
	}

	It("falls back to the next cheapest offering and remembers the failure for three minutes", func(ctx SpecContext) {
		// The three spot offerings cost the same; ties go to the first zone, which has no capacity.
		provider.SetInsufficientCapacity("m5.large", "us-east-1a", v1.CapacityTypeSpot, true)
		out, err := provider.Create(ctx, spotM5("fallback"))
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Labels).To(HaveKeyWithValue(v1.LabelTopologyZone, "us-east-1b"))
		Expect(out.Labels).To(HaveKeyWithValue(v1.CapacityTypeLabelKey, v1.CapacityTypeSpot))

		provider.SetInsufficientCapacity("m5.large", "us-east-1a", v1.CapacityTypeSpot, false)
		Expect(offeringAvailable(ctx, provider, "m5.large", "us-east-1a", v1.CapacityTypeSpot)).To(BeFalse())
		Expect(offeringAvailable(ctx, provider, "m5.large", "us-east-1b", v1.CapacityTypeSpot)).To(BeTrue())
		Expect(offeringAvailable(ctx, provider, "m5.large", "us-east-1a", v1.CapacityTypeOnDemand)).To(BeTrue())

		clock.Step(3*time.Minute - time.Second)
		Expect(offeringAvailable(ctx, provider, "m5.large", "us-east-1a", v1.CapacityTypeSpot)).To(BeFalse())
		clock.Step(time.Second)
		Expect(offeringAvailable(ctx, provider, "m5.large", "us-east-1a", v1.CapacityTypeSpot)).To(BeTrue())
	})

	It("reports injected offerings unavailable while the injection lasts", func(ctx SpecContext) {
		provider.SetInsufficientCapacity("m5.large", "*", v1.CapacityTypeSpot, true)
		Expect(offeringAvailable(ctx, provider, "m5.large", "us-east-1c", v1.CapacityTypeSpot)).To(BeFalse())
		clock.Step(time.Hour)
		Expect(offeringAvailable(ctx, provider, "m5.large", "us-east-1c", v1.CapacityTypeSpot)).To(BeFalse())
		provider.SetInsufficientCapacity("m5.large", "*", v1.CapacityTypeSpot, false)
		Expect(offeringAvailable(ctx, provider, "m5.large", "us-east-1c", v1.CapacityTypeSpot)).To(BeTrue())
	})

	It("returns InsufficientCapacity when every allowed offering is out of capacity", func(ctx SpecContext) {
		provider.SetInsufficientCapacity("m5.large", "us-east-1a", v1.CapacityTypeSpot, true)
		_, err := provider.Create(ctx, spotM5("all-ice", "us-east-1a"))
		Expect(cloudprovider.IsInsufficientCapacityError(err)).To(BeTrue(), "got %v", err)
		expectNoNode(ctx, "all-ice")

		// The failure is remembered: even with capacity back, the offering stays unavailable for a while.
		provider.SetInsufficientCapacity("m5.large", "us-east-1a", v1.CapacityTypeSpot, false)
		_, err = provider.Create(ctx, spotM5("all-ice", "us-east-1a"))
		Expect(cloudprovider.IsInsufficientCapacityError(err)).To(BeTrue(), "got %v", err)
		clock.Step(3 * time.Minute)
		_, err = provider.Create(ctx, spotM5("all-ice", "us-east-1a"))
		Expect(err).NotTo(HaveOccurred())
	})

	It("returns InsufficientCapacity when no instance type fits", func(ctx SpecContext) {
		nc := nodeClaim("too-big", in(v1.LabelInstanceType, "m5.large"))
		nc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: quantity("64")}
		_, err := provider.Create(ctx, nc)
		Expect(cloudprovider.IsInsufficientCapacityError(err)).To(BeTrue(), "got %v", err)
	})

	It("reads injected insufficient capacity from the lathe-sim ConfigMap", func(ctx SpecContext) {
		Expect(env.Client.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: sim.ConfigMapNamespace, Name: sim.ConfigMapName},
			Data: map[string]string{sim.InsufficientCapacityMapKey: "# injected by the e2e suite\n" +
				"m5.large/us-east-1a/spot\n*/us-east-1c/spot # a whole zone\n\nnot-a-valid-line\n"},
		})).To(Succeed())

		_, err := provider.Create(ctx, spotM5("configured", "us-east-1a", "us-east-1c"))
		Expect(cloudprovider.IsInsufficientCapacityError(err)).To(BeTrue(), "got %v", err)
		out, err := provider.Create(ctx, spotM5("configured", "us-east-1a", "us-east-1b", "us-east-1c"))
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Labels).To(HaveKeyWithValue(v1.LabelTopologyZone, "us-east-1b"))

		Expect(offeringAvailable(ctx, provider, "c5.large", "us-east-1c", v1.CapacityTypeSpot)).To(BeFalse())
		Expect(offeringAvailable(ctx, provider, "c5.large", "us-east-1a", v1.CapacityTypeSpot)).To(BeTrue())
		Expect(offeringAvailable(ctx, provider, "c5.large", "us-east-1c", v1.CapacityTypeOnDemand)).To(BeTrue())
	})

	It("sends one read of the lathe-sim ConfigMap for the callers that ask while it is in flight", func(ctx SpecContext) {
		Expect(env.Client.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: sim.ConfigMapNamespace, Name: sim.ConfigMapName},
			Data:       map[string]string{sim.InsufficientCapacityMapKey: "m5.large/us-east-1a/spot\n"},
		})).To(Succeed())
		gate := &heldConfigMapReads{Reader: env.Client, release: make(chan struct{})}
		_, provider = newProvider(func(d *sim.Deps) { d.Reader = gate })
		const callers = 10
		available := make(chan bool, callers)
		for range callers {
			go func() {
				defer GinkgoRecover()
				available <- offeringAvailable(ctx, provider, "m5.large", "us-east-1a", v1.CapacityTypeSpot)
			}()
		}
		Eventually(gate.reads.Load).ShouldNot(BeZero())
		Consistently(gate.reads.Load, 300*time.Millisecond).Should(BeEquivalentTo(1), "callers read the ConfigMap while a read was in flight")
		close(gate.release)
		for range callers {
			Eventually(available).Should(Receive(BeFalse()), "every caller sees the injected offering unavailable")
		}
		Expect(offeringAvailable(ctx, provider, "m5.large", "us-east-1a", v1.CapacityTypeSpot)).To(BeFalse())
		Expect(gate.reads.Load()).To(BeEquivalentTo(2), "a call after the shared read has returned reads again")
	})
})

// heldConfigMapReads is an API reader that counts reads of ConfigMaps and holds each until release is closed.
type heldConfigMapReads struct {
	client.Reader
	reads   atomic.Int32
	release chan struct{}
}

func (r *heldConfigMapReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.ConfigMap); ok {
		r.reads.Add(1)
		select {
		case <-r.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}
