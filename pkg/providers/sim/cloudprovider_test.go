package sim_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
)

var _ = Describe("CloudProvider", func() {
	var provider *sim.CloudProvider

	BeforeEach(func() {
		_, provider = newProvider()
	})
	AfterEach(func(ctx SpecContext) { cleanUp(ctx) })

	// Drift: see interruption_source_test.go.
	It("is a cloud provider named sim that repairs like AWS", func(ctx SpecContext) {
		Expect(provider.Name()).To(Equal("sim"))
		Expect(provider.RepairPolicies()).To(ContainElements(
			cloudprovider.RepairPolicy{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
			cloudprovider.RepairPolicy{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 30 * time.Minute},
		))
	})

	Describe("Create", func() {
		It("launches a Node with the instance's labels, taints, capacity and provider ID", func(ctx SpecContext) {
			nc := nodeClaim("launch", in(v1.LabelInstanceType, "m5.large"), in(v1.LabelTopologyZone, "us-east-1b"),
				in(v1.CapacityTypeLabelKey, v1.CapacityTypeOnDemand))
			nc.Spec.Taints = []corev1.Taint{{Key: "example.com/team", Value: "a", Effect: corev1.TaintEffectNoSchedule}}
			nc.Spec.StartupTaints = []corev1.Taint{{Key: "example.com/init", Effect: corev1.TaintEffectNoSchedule}}

			out, err := provider.Create(ctx, nc)
			Expect(err).NotTo(HaveOccurred())

			node := getNode(ctx, "launch")
			Expect(node.Annotations).To(HaveKeyWithValue("kwok.x-k8s.io/node", "fake"))
			Expect(node.Spec.ProviderID).To(MatchRegexp(`^sim:///us-east-1b/i-[0-9a-f]{17}$`))
			Expect(node.Labels).To(And(
				HaveKeyWithValue(v1.LabelInstanceType, "m5.large"),
				HaveKeyWithValue(v1.LabelTopologyZone, "us-east-1b"),
				HaveKeyWithValue(v1.LabelTopologyRegion, "us-east-1"),
				HaveKeyWithValue(v1.LabelArch, "amd64"),
				HaveKeyWithValue(v1.LabelOS, "linux"),
				HaveKeyWithValue(v1.CapacityTypeLabelKey, v1.CapacityTypeOnDemand),
				HaveKeyWithValue(v1.LabelHostname, "launch"),
				HaveKeyWithValue(v1.NodePoolLabelKey, "default"),
				HaveKeyWithValue(awsv1.LabelInstanceFamily, "m5"),
				HaveKeyWithValue(awsv1.LabelInstanceCPU, "2"),
				HaveKeyWithValue(awsv1.LabelTopologyZoneID, "use1-az2"),
				HaveKeyWithValue(sim.NodeClaimLabelKey, "launch"),
				// The beta twins a kubelet and the cloud's node controller register with (k8s.io/api
				// well_known_labels.go; kubelet updateDefaultLabels).
				HaveKeyWithValue("beta.kubernetes.io/arch", "amd64"),
				HaveKeyWithValue("beta.kubernetes.io/os", "linux"),
				HaveKeyWithValue("beta.kubernetes.io/instance-type", "m5.large"),
				HaveKeyWithValue("failure-domain.beta.kubernetes.io/zone", "us-east-1b"),
				HaveKeyWithValue("failure-domain.beta.kubernetes.io/region", "us-east-1"),
			))
			// The API server adds node.kubernetes.io/not-ready on create (TaintNodesByCondition), as for any new node.
			Expect(node.Spec.Taints).To(ContainElements(v1.UnregisteredNoExecuteTaint, nc.Spec.Taints[0], nc.Spec.StartupTaints[0]))
			m5 := catalogType("m5.large")
			expectSameResources(node.Status.Capacity, m5.Capacity)
			expectSameResources(node.Status.Allocatable, m5.Allocatable())
			Expect(node.Status.Allocatable.Cpu().MilliValue()).To(BeNumerically("<", node.Status.Capacity.Cpu().MilliValue()))

			Expect(out.Name).To(Equal("launch"))
			Expect(out.Status.ProviderID).To(Equal(node.Spec.ProviderID))
			Expect(out.Status.ImageID).To(Equal("ami-0000000000000a640"))
			expectSameResources(out.Status.Capacity, m5.Capacity)
			expectSameResources(out.Status.Allocatable, m5.Allocatable())
			Expect(out.Labels).To(And(
				HaveKeyWithValue(v1.LabelInstanceType, "m5.large"),
				HaveKeyWithValue(v1.LabelTopologyZone, "us-east-1b"),
				HaveKeyWithValue(v1.CapacityTypeLabelKey, v1.CapacityTypeOnDemand),
				HaveKeyWithValue(v1.LabelArch, "amd64"),
				HaveKeyWithValue(v1.LabelOS, "linux"),
				HaveKeyWithValue(v1.LabelTopologyRegion, "us-east-1"),
				HaveKeyWithValue(v1.NodePoolLabelKey, "default"),
				Not(HaveKey(sim.NodeClaimLabelKey)),
			))
			Expect(nc.Status.ProviderID).To(BeEmpty(), "Create must not modify its argument")
		})

		It("honours instance type, zone and capacity type requirements", func(ctx SpecContext) {
			out, err := provider.Create(ctx, nodeClaim("narrow", in(v1.LabelInstanceType, "m5.large"),
				in(v1.LabelTopologyZone, "us-east-1b"), in(v1.CapacityTypeLabelKey, v1.CapacityTypeSpot)))
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Labels).To(And(HaveKeyWithValue(v1.LabelInstanceType, "m5.large"),
				HaveKeyWithValue(v1.LabelTopologyZone, "us-east-1b"), HaveKeyWithValue(v1.CapacityTypeLabelKey, v1.CapacityTypeSpot)))
			Expect(getNode(ctx, "narrow").Spec.ProviderID).To(HavePrefix("sim:///us-east-1b/i-"))
		})

		It("chooses the cheapest instance type whose allocatable holds the requests", func(ctx SpecContext) {
			nc := nodeClaim("cheapest", in(awsv1.LabelInstanceCategory, "m"), in(v1.LabelArch, "amd64"),
				in(v1.CapacityTypeLabelKey, v1.CapacityTypeOnDemand))
			nc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: quantity("3"), corev1.ResourceMemory: quantity("4Gi")}
			fitsRequests := func(it *cloudprovider.InstanceType) bool {
				allocatable := it.Allocatable()
				cpu, memory := allocatable[corev1.ResourceCPU], allocatable[corev1.ResourceMemory]
				return cpu.Cmp(quantity("3")) >= 0 && memory.Cmp(quantity("4Gi")) >= 0
			}
			out, err := provider.Create(ctx, nc)
			Expect(err).NotTo(HaveOccurred())

			chosen := catalogType(out.Labels[v1.LabelInstanceType])
			Expect(fitsRequests(chosen)).To(BeTrue())
			price := func(it *cloudprovider.InstanceType) float64 {
				return it.Offerings.Compatible(onDemand()).CheapestPrice()
			}
			for _, it := range ec2Catalog {
				labels := it.Requirements.Labels()
				if labels[awsv1.LabelInstanceCategory] == "m" && labels[v1.LabelArch] == "amd64" && fitsRequests(it) {
					Expect(price(it)).To(BeNumerically(">=", price(chosen)), "%s is cheaper than %s", it.Name, chosen.Name)
				}
			}
		})

		It("makes one instance however often it is retried", func(ctx SpecContext) {
			nc := nodeClaim("retried", in(v1.LabelInstanceType, "m5.large"))
			first, err := provider.Create(ctx, nc)
			Expect(err).NotTo(HaveOccurred())
			second, err := provider.Create(ctx, nc)
			Expect(err).NotTo(HaveOccurred())
			Expect(second.Status.ProviderID).To(Equal(first.Status.ProviderID))
			nodes := &corev1.NodeList{}
			Expect(env.Client.List(ctx, nodes, client.MatchingLabels{sim.NodeClaimLabelKey: "retried"})).To(Succeed())
			Expect(nodes.Items).To(HaveLen(1))
		})

		It("looks for an earlier launch in its client's cache, not through its API reader", func(ctx SpecContext) {
			_, uncached := newProvider(func(d *sim.Deps) { d.Reader = noNodeReads{env.Client} })
			_, err := uncached.Create(ctx, nodeClaim("cache-only", in(v1.LabelInstanceType, "m5.large")))
			Expect(err).NotTo(HaveOccurred())
		})

		It("returns the instance of an earlier launch that its cache has yet to show", func(ctx SpecContext) {
			nc := nodeClaim("lagging", in(v1.LabelInstanceType, "m5.large"))
			first, err := provider.Create(ctx, nc)
			Expect(err).NotTo(HaveOccurred())
			_, lagging := newProvider(func(d *sim.Deps) { d.Client, d.Reader = laggingNodes{env.Client}, env.Client })
			again, err := lagging.Create(ctx, nc)
			Expect(err).NotTo(HaveOccurred())
			Expect(again.Status.ProviderID).To(Equal(first.Status.ProviderID))
		})

		It("refuses a name taken by a Node it didn't launch", func(ctx SpecContext) {
			Expect(env.Client.Create(ctx, &corev1.Node{ObjectMeta: objectMeta("taken")})).To(Succeed())
			_, err := provider.Create(ctx, nodeClaim("taken"))
			Expect(cloudprovider.IsCreateError(err)).To(BeTrue(), "got %v", err)
		})
	})

	Describe("Delete", func() {
		It("deletes the Node and then reports the instance gone", func(ctx SpecContext) {
			out, err := provider.Create(ctx, nodeClaim("deleted", in(v1.LabelInstanceType, "m5.large")))
			Expect(err).NotTo(HaveOccurred())
			Expect(provider.Delete(ctx, out)).To(Succeed())
			expectNoNode(ctx, "deleted")
			Expect(cloudprovider.IsNodeClaimNotFoundError(provider.Delete(ctx, out))).To(BeTrue())
			_, err = provider.Get(ctx, out.Status.ProviderID)
			Expect(cloudprovider.IsNodeClaimNotFoundError(err)).To(BeTrue())
		})

		It("counts the instance terminated while its Node waits for a finalizer", func(ctx SpecContext) {
			out, err := provider.Create(ctx, nodeClaim("finalized", in(v1.LabelInstanceType, "m5.large")))
			Expect(err).NotTo(HaveOccurred())
			node := getNode(ctx, "finalized")
			patch := client.MergeFrom(node.DeepCopy())
			node.Finalizers = []string{v1.TerminationFinalizer}
			Expect(env.Client.Patch(ctx, node, patch)).To(Succeed())

			Expect(provider.Delete(ctx, out)).To(Succeed())
			node = getNode(ctx, "finalized")
			Expect(node.DeletionTimestamp).NotTo(BeNil())
			Expect(node.Annotations).To(HaveKeyWithValue(sim.TerminatedAnnotationKey, "true"))
			Expect(cloudprovider.IsNodeClaimNotFoundError(provider.Delete(ctx, out))).To(BeTrue())
			list, err := provider.List(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(list).To(BeEmpty())
		})

		It("finds the instance of a NodeClaim whose status never recorded the launch, by the claim's name", func(ctx SpecContext) {
			claim := nodeClaim("unrecorded", in(v1.LabelInstanceType, "m5.large"))
			_, err := provider.Create(ctx, claim)
			Expect(err).NotTo(HaveOccurred())
			Expect(claim.Status.ProviderID).To(BeEmpty())
			Expect(provider.Delete(ctx, claim)).To(Succeed())
			expectNoNode(ctx, "unrecorded")
			Expect(cloudprovider.IsNodeClaimNotFoundError(provider.Delete(ctx, claim))).To(BeTrue())
		})

		It("finds that instance through its API reader while its cache has yet to show the Node", func(ctx SpecContext) {
			claim := nodeClaim("unrecorded-uncached", in(v1.LabelInstanceType, "m5.large"))
			_, err := provider.Create(ctx, claim)
			Expect(err).NotTo(HaveOccurred())
			_, lagging := newProvider(func(d *sim.Deps) { d.Client, d.Reader = laggingNodes{env.Client}, env.Client })
			Expect(lagging.Delete(ctx, claim)).To(Succeed(), "an instance reported gone while it runs is leaked")
			expectNoNode(ctx, "unrecorded-uncached")
		})

		It("reports an unknown instance gone", func(ctx SpecContext) {
			nc := nodeClaim("never-launched")
			nc.Status.ProviderID = "sim:///us-east-1a/i-0123456789abcdef0"
			Expect(cloudprovider.IsNodeClaimNotFoundError(provider.Delete(ctx, nc))).To(BeTrue())
		})
	})

	Describe("Get and List", func() {
		It("describe every instance, including ones no NodeClaim refers to", func(ctx SpecContext) {
			// Neither NodeClaim is ever written to the API server: both instances are orphans.
			orphan, err := provider.Create(ctx, nodeClaim("orphan", in(v1.LabelInstanceType, "c5.large")))
			Expect(err).NotTo(HaveOccurred())
			_, err = provider.Create(ctx, nodeClaim("other", in(v1.LabelInstanceType, "m5.large")))
			Expect(err).NotTo(HaveOccurred())

			list, err := provider.List(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(list).To(HaveLen(2))
			Expect(list[0].Name).To(Equal("orphan"))
			Expect(list[0].Status.ProviderID).To(Equal(orphan.Status.ProviderID))
			Expect(list[1].Name).To(Equal("other"))

			got, err := provider.Get(ctx, orphan.Status.ProviderID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Name).To(Equal("orphan"))
			Expect(got.Labels).To(HaveKeyWithValue(v1.LabelInstanceType, "c5.large"))
			Expect(got.Status.ImageID).To(Equal(orphan.Status.ImageID))
			Expect(got.CreationTimestamp.IsZero()).To(BeFalse())

			_, err = provider.Get(ctx, "aws:///us-east-1a/i-0123456789abcdef0")
			Expect(cloudprovider.IsNodeClaimNotFoundError(err)).To(BeTrue())
		})

		It("describe an instance their cache shows without asking their API reader", func(ctx SpecContext) {
			launched, err := provider.Create(ctx, nodeClaim("cached", in(v1.LabelInstanceType, "m5.large")))
			Expect(err).NotTo(HaveOccurred())
			_, uncached := newProvider(func(d *sim.Deps) { d.Reader = noNodeReads{env.Client} })
			got, err := uncached.Get(ctx, launched.Status.ProviderID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Name).To(Equal("cached"))
			_, err = uncached.IsDrifted(ctx, launched)
			Expect(err).NotTo(HaveOccurred())
		})

		It("find an instance their cache has yet to show through their API reader", func(ctx SpecContext) {
			launched, err := provider.Create(ctx, nodeClaim("not-cached", in(v1.LabelInstanceType, "m5.large")))
			Expect(err).NotTo(HaveOccurred())
			_, lagging := newProvider(func(d *sim.Deps) { d.Client, d.Reader = laggingNodes{env.Client}, env.Client })
			got, err := lagging.Get(ctx, launched.Status.ProviderID)
			Expect(err).NotTo(HaveOccurred(), "an instance reported gone while it runs is leaked")
			Expect(got.Name).To(Equal("not-cached"))
		})
	})
})

// noNodeReads is an API reader that must not be asked for a Node.
type noNodeReads struct{ client.Reader }

func (r noNodeReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.NodeList); ok {
		return errors.New("Nodes were listed through the API reader")
	}
	return r.Reader.List(ctx, list, opts...)
}

func (r noNodeReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Node); ok {
		return errors.New("a Node was read through the API reader")
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// laggingNodes is a client whose cache has yet to show any Node.
type laggingNodes struct{ client.Client }

func (c laggingNodes) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.NodeList); ok {
		return nil
	}
	return c.Client.List(ctx, list, opts...)
}

func (c laggingNodes) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Node); ok {
		return apierrors.NewNotFound(corev1.Resource("nodes"), key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}
