package consolidatable_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/consolidatable"
	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
)

var _ = Describe("Controller", func() {
	var (
		clock      *clocktesting.FakeClock
		controller *consolidatable.Controller
	)

	BeforeEach(func(ctx context.Context) {
		clock = clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
		controller = consolidatable.NewController(consolidatable.Deps{Client: env.Client, Clock: clock})
		Expect(env.Client.Create(ctx, &v1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: v1.NodePoolSpec{
				Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration("30s")},
				Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
					Requirements: []v1.NodeSelectorRequirementWithMinValues{},
					NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				}},
			},
		})).To(Succeed())
	})

	// initializedClaim creates a claim of the pool, initialized a minute ago: consolidatable now.
	initializedClaim := func(ctx context.Context) *v1.NodeClaim {
		claim := &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "default-", Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
			Spec:       v1.NodeClaimSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{}, NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}},
		}
		Expect(env.Client.Create(ctx, claim)).To(Succeed())
		claim.Status.ProviderID = "fake:///z/1"
		meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{
			Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(clock.Now().Add(-time.Minute)),
		})
		Expect(env.Client.Status().Update(ctx, claim)).To(Succeed())
		return claim
	}
	consolidatableCondition := func(ctx context.Context, claim *v1.NodeClaim) *metav1.Condition {
		stored := &v1.NodeClaim{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(claim), stored)).To(Succeed())
		return meta.FindStatusCondition(stored.Status.Conditions, v1.ConditionTypeConsolidatable)
	}

	It("marks the claim from a copy that another writer's label change has made stale", func(ctx context.Context) {
		claim := initializedClaim(ctx)
		stale := claim.DeepCopy()
		claim.Labels["team"] = "a"
		Expect(env.Client.Update(ctx, claim)).To(Succeed())

		_, err := controller.Reconcile(ctx, stale)
		Expect(err).NotTo(HaveOccurred())
		Expect(consolidatableCondition(ctx, claim)).To(And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue)))
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		Expect(claim.Labels).To(HaveKeyWithValue("team", "a"))
	})

	It("writes nothing from a copy older than the claim's last pod event, and looks again soon without an error", func(ctx context.Context) {
		claim := initializedClaim(ctx)
		stale := claim.DeepCopy()
		claim.Status.LastPodEventTime = metav1.NewTime(clock.Now())
		Expect(env.Client.Status().Update(ctx, claim)).To(Succeed())

		result, err := controller.Reconcile(ctx, stale)
		Expect(err).NotTo(HaveOccurred())
		Expect(result.RequeueAfter).To(Equal(fieldpatch.ConflictRetryInterval))
		Expect(consolidatableCondition(ctx, claim)).To(BeNil())

		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		_, err = controller.Reconcile(ctx, claim)
		Expect(err).NotTo(HaveOccurred())
		Expect(consolidatableCondition(ctx, claim)).To(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse)))
	})
})
