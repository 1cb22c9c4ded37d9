package drift_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/drift"
	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
)

var _ = Describe("Drift", func() {
	var (
		clock      *clocktesting.FakeClock
		cloud      *fake.CloudProvider
		controller *drift.Controller
		nodePool   *v1.NodePool
	)

	BeforeEach(func(ctx context.Context) {
		clock = clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
		cloud = fake.New(&cloudprovider.InstanceType{Name: "m5.large", Offerings: cloudprovider.Offerings{
			{Zone: "us-east-1a", CapacityType: v1.CapacityTypeOnDemand, Price: 0.096, Available: true},
			{Zone: "us-east-1a", CapacityType: v1.CapacityTypeSpot, Price: 0.04, Available: false},
		}})
		controller = drift.NewController(drift.Deps{Client: env.Client, CloudProvider: cloud, Clock: clock})
		nodePool = &v1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: map[string]string{
				v1.NodePoolHashAnnotationKey: "1111", v1.NodePoolHashVersionAnnotationKey: "v3",
			}},
			Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m5.xlarge"}},
				},
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			}}},
		}
		Expect(env.Client.Create(ctx, nodePool)).To(Succeed())
	})

	// launchedNodeClaim creates a NodeClaim of the pool, made from its current template, that launched.
	launchedNodeClaim := func(ctx context.Context, mutate ...func(*v1.NodeClaim)) *v1.NodeClaim {
		nodeClaim := &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{
				GenerateName: "default-",
				Labels:       map[string]string{v1.NodePoolLabelKey: "default", v1.LabelInstanceType: "m5.large"},
				Annotations:  map[string]string{v1.NodePoolHashAnnotationKey: "1111", v1.NodePoolHashVersionAnnotationKey: "v3"},
			},
			Spec: v1.NodeClaimSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpExists}}, NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}},
		}
		for _, m := range mutate {
			m(nodeClaim)
		}
		Expect(env.Client.Create(ctx, nodeClaim)).To(Succeed())
		nodeClaim.Status.ProviderID = "fake:///z/1"
		meta.SetStatusCondition(&nodeClaim.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched"})
		Expect(env.Client.Status().Update(ctx, nodeClaim)).To(Succeed())
		return nodeClaim
	}
	reconcileClaim := func(ctx context.Context, nodeClaim *v1.NodeClaim) reconcile.Result {
		result, err := controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nodeClaim)})
		Expect(err).NotTo(HaveOccurred())
		return result
	}
	drifted := func(ctx context.Context, nodeClaim *v1.NodeClaim) *metav1.Condition {
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		return meta.FindStatusCondition(nodeClaim.Status.Conditions, v1.ConditionTypeDrifted)
	}
	updatePool := func(ctx context.Context, mutate func(*v1.NodePool)) {
		Expect(get(ctx, nodePool)).To(BeTrue())
		mutate(nodePool)
		Expect(env.Client.Update(ctx, nodePool)).To(Succeed())
	}
	beDrifted := func(reason string) OmegaMatcher {
		return And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", reason))
	}

	It("leaves a claim that matches its pool and node class unmarked and checks again in 5 minutes", func(ctx context.Context) {
		nodeClaim := launchedNodeClaim(ctx)
		Expect(reconcileClaim(ctx, nodeClaim).RequeueAfter).To(Equal(5 * time.Minute))
		Expect(drifted(ctx, nodeClaim)).To(BeNil())
	})

	It("marks NodePoolDrifted when the pool's template hash changed", func(ctx context.Context) {
		nodeClaim := launchedNodeClaim(ctx)
		updatePool(ctx, func(np *v1.NodePool) { np.Annotations[v1.NodePoolHashAnnotationKey] = "2222" })
		Expect(reconcileClaim(ctx, nodeClaim).RequeueAfter).To(Equal(5 * time.Minute))
		Expect(drifted(ctx, nodeClaim)).To(beDrifted("NodePoolDrifted"))
	})

	It("doesn't take a hash of another hash version for drift", func(ctx context.Context) {
		nodeClaim := launchedNodeClaim(ctx)
		updatePool(ctx, func(np *v1.NodePool) {
			np.Annotations[v1.NodePoolHashAnnotationKey] = "2222"
			np.Annotations[v1.NodePoolHashVersionAnnotationKey] = "v4"
		})
		reconcileClaim(ctx, nodeClaim)
		Expect(drifted(ctx, nodeClaim)).To(BeNil())
	})

	It("doesn't take a missing hash for drift", func(ctx context.Context) {
		nodeClaim := launchedNodeClaim(ctx, func(nc *v1.NodeClaim) { delete(nc.Annotations, v1.NodePoolHashAnnotationKey) })
		reconcileClaim(ctx, nodeClaim)
		Expect(drifted(ctx, nodeClaim)).To(BeNil())
	})

	It("marks RequirementsDrifted when the claim's labels no longer satisfy the pool's requirements", func(ctx context.Context) {
		nodeClaim := launchedNodeClaim(ctx)
		updatePool(ctx, func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements[0].Values = []string{"c5.large"}
		})
		reconcileClaim(ctx, nodeClaim)
		Expect(drifted(ctx, nodeClaim)).To(beDrifted("RequirementsDrifted"))
	})

	It("marks InstanceTypeNotFound when the pool's types lose the claim's type or its offering", func(ctx context.Context) {
		spot := launchedNodeClaim(ctx, func(nc *v1.NodeClaim) {
			nc.Labels[v1.CapacityTypeLabelKey] = v1.CapacityTypeSpot
			nc.Labels[v1.LabelTopologyZone] = "us-east-1a"
		})
		reconcileClaim(ctx, spot)
		Expect(drifted(ctx, spot)).To(BeNil(), "an unavailable offering is still the claim's")

		otherZone := launchedNodeClaim(ctx, func(nc *v1.NodeClaim) { nc.Labels[v1.LabelTopologyZone] = "us-east-1b" })
		reconcileClaim(ctx, otherZone)
		Expect(drifted(ctx, otherZone)).To(beDrifted("InstanceTypeNotFound"), "no offering in its zone")

		cloud.InstanceTypes = nil
		reconcileClaim(ctx, spot)
		Expect(drifted(ctx, spot)).To(beDrifted("InstanceTypeNotFound"))
	})

	It("marks the reason the cloud provider reports and removes the mark once it no longer does", func(ctx context.Context) {
		nodeClaim := launchedNodeClaim(ctx)
		cloud.Drifted = "AMIDrift"
		reconcileClaim(ctx, nodeClaim)
		Expect(drifted(ctx, nodeClaim)).To(beDrifted("AMIDrift"))
		Expect(drifted(ctx, nodeClaim).LastTransitionTime.Time).To(BeTemporally("==", clock.Now()))

		cloud.Drifted = ""
		Expect(reconcileClaim(ctx, nodeClaim).RequeueAfter).To(Equal(5 * time.Minute))
		Expect(drifted(ctx, nodeClaim)).To(BeNil())
	})

	It("prefers the pool's reasons to the cloud provider's", func(ctx context.Context) {
		nodeClaim := launchedNodeClaim(ctx)
		cloud.Drifted = "AMIDrift"
		updatePool(ctx, func(np *v1.NodePool) { np.Annotations[v1.NodePoolHashAnnotationKey] = "2222" })
		reconcileClaim(ctx, nodeClaim)
		Expect(drifted(ctx, nodeClaim)).To(beDrifted("NodePoolDrifted"))
		Expect(cloud.Calls(fake.MethodIsDrifted)).To(BeZero())
	})

	It("only marks launched claims, and removes a stale mark from one that isn't", func(ctx context.Context) {
		nodeClaim := launchedNodeClaim(ctx)
		cloud.Drifted = "AMIDrift"
		meta.SetStatusCondition(&nodeClaim.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeLaunched, Status: metav1.ConditionFalse, Reason: "Launching"})
		meta.SetStatusCondition(&nodeClaim.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: "AMIDrift"})
		Expect(env.Client.Status().Update(ctx, nodeClaim)).To(Succeed())
		Expect(reconcileClaim(ctx, nodeClaim)).To(BeZero())
		Expect(drifted(ctx, nodeClaim)).To(BeNil())
		Expect(cloud.Calls(fake.MethodIsDrifted)).To(BeZero())
	})
})

var _ = Describe("Drift, when the claim changes while it is reconciled", func() {
	var nodePool *v1.NodePool

	BeforeEach(func(ctx context.Context) {
		nodePool = &v1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: map[string]string{
				v1.NodePoolHashAnnotationKey: "2222", v1.NodePoolHashVersionAnnotationKey: "v3",
			}},
			Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{},
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			}}},
		}
		Expect(env.Client.Create(ctx, nodePool)).To(Succeed())
	})

	// claimOfOldTemplate creates a launched claim whose hash is not the pool's: drifted.
	claimOfOldTemplate := func(ctx context.Context) *v1.NodeClaim {
		claim := &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{
				GenerateName: "default-",
				Labels:       map[string]string{v1.NodePoolLabelKey: "default"},
				Annotations:  map[string]string{v1.NodePoolHashAnnotationKey: "1111", v1.NodePoolHashVersionAnnotationKey: "v3"},
			},
			Spec: v1.NodeClaimSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{}, NodeClassRef: nodePool.Spec.Template.Spec.NodeClassRef},
		}
		Expect(env.Client.Create(ctx, claim)).To(Succeed())
		claim.Status.ProviderID = "fake:///z/1"
		meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched"})
		Expect(env.Client.Status().Update(ctx, claim)).To(Succeed())
		return claim
	}
	// controllerReading returns a drift controller whose read of a NodeClaim is followed by meanwhile,
	// another writer's change, so that the copy it decides from is stale.
	controllerReading := func(meanwhile func(context.Context, *v1.NodeClaim)) *drift.Controller {
		kube, err := env.StaleReadClient(func(ctx context.Context, read client.Object) error {
			if claim, ok := read.(*v1.NodeClaim); ok {
				meanwhile(ctx, claim)
			}
			return nil
		})
		Expect(err).NotTo(HaveOccurred())
		return drift.NewController(drift.Deps{Client: kube, CloudProvider: fake.New(), Clock: clocktesting.NewFakeClock(time.Now())})
	}
	drifted := func(ctx context.Context, claim *v1.NodeClaim) *metav1.Condition {
		Expect(get(ctx, claim)).To(BeTrue())
		return meta.FindStatusCondition(claim.Status.Conditions, v1.ConditionTypeDrifted)
	}

	It("marks it though another writer changed a field drift does not read", func(ctx context.Context) {
		claim := claimOfOldTemplate(ctx)
		controller := controllerReading(func(ctx context.Context, c *v1.NodeClaim) {
			c.Status.LastPodEventTime = metav1.NewTime(time.Now().Truncate(time.Second))
			Expect(env.Client.Status().Update(ctx, c)).To(Succeed())
		})
		_, err := controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(claim)})
		Expect(err).NotTo(HaveOccurred())
		Expect(drifted(ctx, claim)).To(And(Not(BeNil()), HaveField("Reason", "NodePoolDrifted")))
		Expect(claim.Status.LastPodEventTime.IsZero()).To(BeFalse())
	})

	It("writes nothing when the hash it found drifted changed meanwhile, and looks again soon without an error", func(ctx context.Context) {
		claim := claimOfOldTemplate(ctx)
		controller := controllerReading(func(ctx context.Context, c *v1.NodeClaim) {
			c.Annotations[v1.NodePoolHashAnnotationKey] = "2222"
			Expect(env.Client.Update(ctx, c)).To(Succeed())
		})
		result, err := controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(claim)})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.RequeueAfter).To(Equal(fieldpatch.ConflictRetryInterval))
		Expect(drifted(ctx, claim)).To(BeNil())
	})
})
