package expiration_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex/fieldindextest"
	nodetermination "github.com/lathe-autoscaler/lathe/pkg/controllers/node/termination"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/expiration"
	nodeclaimtermination "github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/termination"
	eventsfake "github.com/lathe-autoscaler/lathe/pkg/events/fake"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

var _ = Describe("Expiration", func() {
	var (
		clock      *clocktesting.FakeClock
		recorder   *eventsfake.Recorder
		registry   *prometheus.Registry
		controller *expiration.Controller
	)

	BeforeEach(func() {
		clock = clocktesting.NewFakeClock(time.Now())
		recorder = &eventsfake.Recorder{}
		registry = prometheus.NewRegistry()
		controller = expiration.NewController(expiration.Deps{Client: env.Client, Clock: clock, Recorder: recorder, Registerer: registry})
	})

	newNodeClaim := func(ctx context.Context, expireAfter string, mutate ...func(*v1.NodeClaim)) *v1.NodeClaim {
		nodeClaim := &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{
				GenerateName: "default-",
				Labels:       map[string]string{v1.NodePoolLabelKey: "default", v1.CapacityTypeLabelKey: v1.CapacityTypeSpot},
				Finalizers:   []string{v1.TerminationFinalizer},
			},
			Spec: v1.NodeClaimSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpExists}},
				ExpireAfter:  v1.MustParseNillableDuration(expireAfter),
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			},
		}
		for _, m := range mutate {
			m(nodeClaim)
		}
		Expect(env.Client.Create(ctx, nodeClaim)).To(Succeed())
		return nodeClaim
	}
	reconcileClaim := func(ctx context.Context, nodeClaim *v1.NodeClaim) reconcile.Result {
		result, err := controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nodeClaim)})
		Expect(err).NotTo(HaveOccurred())
		return result
	}
	deleting := func(ctx context.Context, nodeClaim *v1.NodeClaim) bool {
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		return !nodeClaim.DeletionTimestamp.IsZero()
	}

	It("requeues after exactly the time left, then deletes the NodeClaim, counts it and says why", func(ctx context.Context) {
		nodeClaim := newNodeClaim(ctx, "1h")
		clock.SetTime(nodeClaim.CreationTimestamp.Add(10 * time.Minute))
		Expect(reconcileClaim(ctx, nodeClaim).RequeueAfter).To(Equal(50 * time.Minute))
		Expect(deleting(ctx, nodeClaim)).To(BeFalse())

		clock.SetTime(nodeClaim.CreationTimestamp.Add(time.Hour - time.Second))
		Expect(reconcileClaim(ctx, nodeClaim).RequeueAfter).To(Equal(time.Second))
		Expect(deleting(ctx, nodeClaim)).To(BeFalse())

		clock.SetTime(nodeClaim.CreationTimestamp.Add(time.Hour))
		Expect(reconcileClaim(ctx, nodeClaim)).To(BeZero())
		Expect(deleting(ctx, nodeClaim)).To(BeTrue())
		labels := map[string]string{"reason": "expired", "nodepool": "default", "capacity_type": v1.CapacityTypeSpot}
		Expect(counterValue(registry, "karpenter_nodeclaims_disrupted_total", labels)).To(Equal(1.0))
		Expect(recorder.WithReason(expiration.ReasonDisruptionTerminating)).To(ConsistOf(
			HaveField("Message", "Disrupting NodeClaim: Expired")))

		Expect(reconcileClaim(ctx, nodeClaim)).To(BeZero(), "a claim being deleted is left alone")
		Expect(counterValue(registry, "karpenter_nodeclaims_disrupted_total", labels)).To(Equal(1.0))
	})

	It("never deletes a NodeClaim whose expireAfter is Never", func(ctx context.Context) {
		nodeClaim := newNodeClaim(ctx, v1.Never)
		clock.SetTime(nodeClaim.CreationTimestamp.Add(10 * 365 * 24 * time.Hour))
		Expect(reconcileClaim(ctx, nodeClaim)).To(BeZero())
		Expect(deleting(ctx, nodeClaim)).To(BeFalse())
	})

	It("is not held back by a do-not-disrupt pod, whose node goes by the terminationGracePeriod", func(ctx context.Context) {
		cloud := fake.New(&cloudprovider.InstanceType{
			Name:         "m",
			Requirements: scheduling.FromLabels(map[string]string{v1.LabelInstanceType: "m"}),
			Offerings:    cloudprovider.Offerings{{Zone: "z", CapacityType: v1.CapacityTypeSpot, Price: 1, Available: true}},
			Capacity:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")},
		})
		// The termination controllers look Nodes and NodeClaims up through the cache's field indexes; this
		// client answers those lookups against the API server.
		indexed := fieldindextest.NewClient(env.Client)
		claimTermination := nodeclaimtermination.NewController(nodeclaimtermination.Deps{
			Client: indexed, CloudProvider: cloud, Clock: clock, Recorder: recorder, Registerer: registry,
		})
		nodeTermination := nodetermination.NewController(nodetermination.Deps{
			Client: indexed, CloudProvider: cloud, Clock: clock, Recorder: recorder, Registerer: registry,
		})
		// Expiring after seconds keeps the fake clock near the API server's: the drain deadline is counted from
		// the deletion timestamp the API server sets.
		nodeClaim := newNodeClaim(ctx, "2s", func(nc *v1.NodeClaim) {
			nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 10 * time.Minute}
		})
		launched, err := cloud.Create(ctx, nodeClaim)
		Expect(err).NotTo(HaveOccurred())
		nodeClaim.Status.ProviderID, nodeClaim.Status.NodeName = launched.Status.ProviderID, nodeClaim.Name
		Expect(env.Client.Status().Update(ctx, nodeClaim)).To(Succeed())
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: nodeClaim.Name, Labels: map[string]string{v1.NodePoolLabelKey: "default"}, Finalizers: []string{v1.TerminationFinalizer}},
			Spec:       corev1.NodeSpec{ProviderID: launched.Status.ProviderID},
		}
		Expect(env.Client.Create(ctx, node)).To(Succeed())
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "db-", Namespace: "default", Annotations: map[string]string{v1.DoNotDisruptAnnotationKey: "true"}},
			Spec:       corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause"}}},
		}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())
		pod.Status.Phase = corev1.PodRunning
		Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())

		clock.SetTime(nodeClaim.CreationTimestamp.Add(2 * time.Second))
		reconcileClaim(ctx, nodeClaim)
		Expect(deleting(ctx, nodeClaim)).To(BeTrue(), "do-not-disrupt doesn't stop expiration")

		finalizeClaim := func() reconcile.Result {
			result, err := claimTermination.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nodeClaim)})
			Expect(err).NotTo(HaveOccurred())
			return result
		}
		finalizeNode := func() reconcile.Result {
			result, err := nodeTermination.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)})
			Expect(err).NotTo(HaveOccurred())
			return result
		}
		finalizeClaim()
		Expect(get(ctx, node)).To(BeTrue())
		Expect(node.DeletionTimestamp.IsZero()).To(BeFalse())
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		deadline, err := time.Parse(time.RFC3339, nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey])
		Expect(err).NotTo(HaveOccurred())
		Expect(deadline).To(BeTemporally("==", nodeClaim.DeletionTimestamp.Add(10*time.Minute)))

		finalizeNode()
		Expect(get(ctx, pod)).To(BeTrue())
		Expect(pod.DeletionTimestamp.IsZero()).To(BeTrue(), "the do-not-disrupt pod stays until the deadline")

		clock.SetTime(deadline)
		finalizeNode()
		Expect(get(ctx, pod)).To(BeFalse(), "deleted at the deadline")
		Eventually(func() bool { finalizeNode(); return get(ctx, node) }).Should(BeFalse())
		Eventually(func() bool { finalizeClaim(); return get(ctx, nodeClaim) }).Should(BeFalse())
		Expect(cloud.Calls(fake.MethodDelete)).To(BeNumerically(">=", 1))
	})
})
