package garbagecollection_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
)

var _ = Describe("Garbage collection", func() {
	var (
		clock      *clocktesting.FakeClock
		provider   *sim.CloudProvider
		registry   *prometheus.Registry
		controller *garbagecollection.Controller
	)

	BeforeEach(func() {
		clock = clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
		var err error
		provider, err = sim.New(sim.Deps{Client: env.Client, Clock: clock})
		Expect(err).NotTo(HaveOccurred())
		registry = prometheus.NewRegistry()
		controller = garbagecollection.NewController(garbagecollection.Deps{
			Client: env.Client, CloudProvider: provider, Clock: clock, Registerer: registry, Interval: time.Minute,
		})
	})

	newNodeClaim := func(name string) *v1.NodeClaim {
		return &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
			Spec: v1.NodeClaimSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
				},
				NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nodeClassName},
			},
		}
	}
	collect := func(ctx context.Context) {
		result, err := controller.Reconcile(ctx, reconcile.Request{})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.RequeueAfter).To(Equal(time.Minute))
	}
	listed := func(ctx context.Context) []string {
		instances, err := provider.List(ctx)
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, instance := range instances {
			names = append(names, instance.Name)
		}
		return names
	}

	It("terminates an instance launched behind Lathe's back once it is older than 30 s", func(ctx context.Context) {
		// Launched straight through the provider: no NodeClaim object refers to it.
		orphan, err := provider.Create(ctx, newNodeClaim("orphan"))
		Expect(err).NotTo(HaveOccurred())
		Expect(listed(ctx)).To(ConsistOf("orphan"), "the provider lists instances no NodeClaim refers to")
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "orphan"}}
		Expect(get(ctx, node)).To(BeTrue())

		clock.SetTime(node.CreationTimestamp.Add(30 * time.Second))
		collect(ctx)
		Expect(listed(ctx)).To(ConsistOf("orphan"), "too young: its claim may be being recorded")

		clock.SetTime(node.CreationTimestamp.Add(31 * time.Second))
		collect(ctx)
		Expect(listed(ctx)).To(BeEmpty())
		_, err = provider.Get(ctx, orphan.Status.ProviderID)
		Expect(cloudprovider.IsNodeClaimNotFoundError(err)).To(BeTrue(), "got %v", err)
		Expect(get(ctx, node)).To(BeFalse(), "its Node is deleted")
	})

	It("leaves instances that a NodeClaim refers to", func(ctx context.Context) {
		nodeClaim := newNodeClaim("claimed")
		Expect(env.Client.Create(ctx, nodeClaim)).To(Succeed())
		launched, err := provider.Create(ctx, nodeClaim)
		Expect(err).NotTo(HaveOccurred())
		nodeClaim.Status.ProviderID = launched.Status.ProviderID
		Expect(env.Client.Status().Update(ctx, nodeClaim)).To(Succeed())

		clock.Step(time.Hour)
		collect(ctx)
		Expect(listed(ctx)).To(ConsistOf("claimed"))
	})

	It("leaves an instance whose NodeClaim hasn't recorded its provider ID yet", func(ctx context.Context) {
		nodeClaim := newNodeClaim("recording")
		Expect(env.Client.Create(ctx, nodeClaim)).To(Succeed())
		_, err := provider.Create(ctx, nodeClaim)
		Expect(err).NotTo(HaveOccurred())

		clock.Step(time.Hour)
		collect(ctx)
		Expect(listed(ctx)).To(ConsistOf("recording"))
	})

	It("deletes a launched NodeClaim whose instance is gone, and counts it", func(ctx context.Context) {
		nodeClaim := newNodeClaim("vanished")
		nodeClaim.Labels[v1.CapacityTypeLabelKey] = v1.CapacityTypeOnDemand
		Expect(env.Client.Create(ctx, nodeClaim)).To(Succeed())
		launched, err := provider.Create(ctx, nodeClaim)
		Expect(err).NotTo(HaveOccurred())
		nodeClaim.Status.ProviderID = launched.Status.ProviderID
		meta.SetStatusCondition(&nodeClaim.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched"})
		Expect(env.Client.Status().Update(ctx, nodeClaim)).To(Succeed())

		collect(ctx)
		Expect(get(ctx, nodeClaim)).To(BeTrue(), "its instance runs")

		Expect(provider.Delete(ctx, nodeClaim)).To(Succeed()) // the cloud terminates it
		collect(ctx)
		Expect(get(ctx, nodeClaim)).To(BeFalse())
		labels := map[string]string{"reason": "garbage_collected", "nodepool": "default", "capacity_type": v1.CapacityTypeOnDemand}
		Expect(counterValue(registry, "karpenter_nodeclaims_disrupted_total", labels)).To(Equal(1.0))
	})

	It("leaves an unnamed instance while a claim of its pool is launching, then collects it", func(ctx context.Context) {
		// A batched launch whose claims crashed before tagging their instances leaves instances without a
		// name; a claim of the pool that is launching again may adopt one.
		unnamed := &unnamedInstances{CloudProvider: provider, names: map[string]bool{"batched": true}}
		controller = garbagecollection.NewController(garbagecollection.Deps{
			Client: env.Client, CloudProvider: unnamed, Clock: clock, Registerer: registry, Interval: time.Minute,
		})
		_, err := provider.Create(ctx, newNodeClaim("batched"))
		Expect(err).NotTo(HaveOccurred())
		launching := newNodeClaim("launching")
		Expect(env.Client.Create(ctx, launching)).To(Succeed())

		clock.Step(time.Hour)
		collect(ctx)
		Expect(listed(ctx)).To(ConsistOf("batched"), "a claim of its pool may still adopt it")

		other := newNodeClaim("other-pool")
		other.Labels[v1.NodePoolLabelKey] = "other"
		Expect(env.Client.Create(ctx, other)).To(Succeed())
		Expect(env.Client.Delete(ctx, launching)).To(Succeed())
		collect(ctx)
		Expect(listed(ctx)).To(BeEmpty(), "no claim of its pool is launching any more")
	})

	It("leaves NodeClaims that haven't launched", func(ctx context.Context) {
		nodeClaim := newNodeClaim("launching")
		Expect(env.Client.Create(ctx, nodeClaim)).To(Succeed())
		nodeClaim.Status.ProviderID = sim.ProviderIDPrefix + "/us-east-1a/i-0000000000000000"
		Expect(env.Client.Status().Update(ctx, nodeClaim)).To(Succeed())
		collect(ctx)
		Expect(get(ctx, nodeClaim)).To(BeTrue())
	})
})

// unnamedInstances lists the named instances without their names, as a provider lists instances whose
// NodeClaim tag was never written.
type unnamedInstances struct {
	*sim.CloudProvider
	names map[string]bool
}

func (u *unnamedInstances) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	instances, err := u.CloudProvider.List(ctx)
	for _, in := range instances {
		if u.names[in.Name] {
			in.Name = ""
		}
	}
	return instances, err
}
