package health_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/node/health"
	eventsfake "github.com/lathe-autoscaler/lathe/pkg/events/fake"
)

var _ = Describe("Node repair", func() {
	var (
		clock      *clocktesting.FakeClock
		recorder   *eventsfake.Recorder
		registry   *prometheus.Registry
		controller *health.Controller
		seq        int
	)

	BeforeEach(func(ctx context.Context) {
		clock = clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
		recorder = &eventsfake.Recorder{}
		registry = prometheus.NewRegistry()
		// The fake's one policy: Ready=False for 30 minutes.
		controller = health.NewController(health.Deps{Client: env.Client, CloudProvider: fake.New(), Clock: clock, Recorder: recorder, Registerer: registry})
		Expect(env.Client.Create(ctx, &v1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpExists}},
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			}}},
		})).To(Succeed())
	})

	// nodeWithClaim creates a NodeClaim of the default pool and its Node, whose Ready condition has had the
	// status since the transition time.
	nodeWithClaim := func(ctx context.Context, ready corev1.ConditionStatus, since time.Time) (*corev1.Node, *v1.NodeClaim) {
		seq++
		providerID := fmt.Sprintf("fake:///z/%d", seq)
		labels := map[string]string{v1.NodePoolLabelKey: "default", v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand}
		nodeClaim := &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "default-", Labels: labels, Finalizers: []string{v1.TerminationFinalizer}},
			Spec:       v1.NodeClaimSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpExists}}, NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}},
		}
		Expect(env.Client.Create(ctx, nodeClaim)).To(Succeed())
		nodeClaim.Status.ProviderID, nodeClaim.Status.ImageID = providerID, "ami-1"
		Expect(env.Client.Status().Update(ctx, nodeClaim)).To(Succeed())
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: nodeClaim.Name, Labels: labels},
			Spec:       corev1.NodeSpec{ProviderID: providerID},
		}
		Expect(env.Client.Create(ctx, node)).To(Succeed())
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastTransitionTime: metav1.NewTime(since), Reason: "Test"}}
		Expect(env.Client.Status().Update(ctx, node)).To(Succeed())
		return node, nodeClaim
	}
	reconcileNode := func(ctx context.Context, node *corev1.Node) reconcile.Result {
		result, err := controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)})
		Expect(err).NotTo(HaveOccurred())
		return result
	}
	deleting := func(ctx context.Context, nodeClaim *v1.NodeClaim) bool {
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		return !nodeClaim.DeletionTimestamp.IsZero()
	}
	// healthyNodes adds n healthy nodes to the pool.
	healthyNodes := func(ctx context.Context, n int) {
		for range n {
			nodeWithClaim(ctx, corev1.ConditionTrue, clock.Now())
		}
	}

	It("leaves a healthy node alone", func(ctx context.Context) {
		node, nodeClaim := nodeWithClaim(ctx, corev1.ConditionTrue, clock.Now().Add(-time.Hour))
		Expect(reconcileNode(ctx, node)).To(BeZero())
		Expect(deleting(ctx, nodeClaim)).To(BeFalse())
	})

	It("waits out the policy's toleration, then replaces the node forcefully and counts it", func(ctx context.Context) {
		healthyNodes(ctx, 4)
		since := clock.Now().Add(-10 * time.Minute)
		node, nodeClaim := nodeWithClaim(ctx, corev1.ConditionFalse, since)
		Expect(reconcileNode(ctx, node).RequeueAfter).To(Equal(20 * time.Minute))
		Expect(deleting(ctx, nodeClaim)).To(BeFalse())

		clock.SetTime(since.Add(30 * time.Minute))
		Expect(reconcileNode(ctx, node)).To(BeZero())
		Expect(deleting(ctx, nodeClaim)).To(BeTrue())
		Expect(nodeClaim.Annotations).To(HaveKeyWithValue(v1.NodeClaimTerminationTimestampAnnotationKey, clock.Now().Format(time.RFC3339)),
			"the drain doesn't wait for PDBs")
		Expect(counterValue(registry, "karpenter_nodeclaims_disrupted_total", map[string]string{"reason": "unhealthy", "nodepool": "default"})).To(Equal(1.0))
		Expect(counterValue(registry, "karpenter_nodeclaims_unhealthy_disrupted_total",
			map[string]string{"condition": "ready", "nodepool": "default", "capacity_type": v1.CapacityTypeOnDemand, "image_id": "ami-1"})).To(Equal(1.0))
		Expect(recorder.WithReason(health.ReasonNodeRepairBlocked)).To(BeEmpty())
	})

	It("ignores a condition status no policy names", func(ctx context.Context) {
		node, nodeClaim := nodeWithClaim(ctx, corev1.ConditionUnknown, clock.Now().Add(-time.Hour))
		Expect(reconcileNode(ctx, node)).To(BeZero())
		Expect(deleting(ctx, nodeClaim)).To(BeFalse())
	})

	It("holds back when more than 20% of the pool's nodes are unhealthy", func(ctx context.Context) {
		healthyNodes(ctx, 3)
		since := clock.Now().Add(-time.Hour)
		node, nodeClaim := nodeWithClaim(ctx, corev1.ConditionFalse, since)
		_, other := nodeWithClaim(ctx, corev1.ConditionFalse, since)
		// 2 of 5 unhealthy: more than ceil(20% of 5) = 1.
		Expect(reconcileNode(ctx, node).RequeueAfter).To(Equal(5 * time.Minute))
		Expect(deleting(ctx, nodeClaim)).To(BeFalse())
		Expect(deleting(ctx, other)).To(BeFalse())
		Expect(recorder.WithReason(health.ReasonNodeRepairBlocked)).To(HaveLen(3), "on the node, its claim and its pool")
		Expect(counterValue(registry, "karpenter_nodeclaims_unhealthy_disrupted_total", nil)).To(BeZero())
	})

	It("repairs when exactly 20% (rounded up) of the pool's nodes are unhealthy", func(ctx context.Context) {
		healthyNodes(ctx, 3)
		node, nodeClaim := nodeWithClaim(ctx, corev1.ConditionFalse, clock.Now().Add(-time.Hour))
		// 1 of 4 unhealthy: ceil(20% of 4) = 1.
		Expect(reconcileNode(ctx, node)).To(BeZero())
		Expect(deleting(ctx, nodeClaim)).To(BeTrue())
	})
})
