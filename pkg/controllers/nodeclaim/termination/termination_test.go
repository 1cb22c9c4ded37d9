package termination_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/termination"
)

var _ = Describe("NodeClaim termination", func() {
	var f *fixture

	BeforeEach(func() {
		f = newFixture()
	})

	It("ignores NodeClaims that aren't being deleted", func(ctx context.Context) {
		nodeClaim, node := f.launch()
		Expect(f.reconcile(nodeClaim)).To(BeZero())
		Expect(get(ctx, node)).To(BeTrue())
		Expect(node.DeletionTimestamp.IsZero()).To(BeTrue())
		Expect(f.cloud.Calls(fake.MethodDelete)).To(BeZero())
	})

	It("deletes the Node and releases the NodeClaim only once the Node and the instance are gone", func(ctx context.Context) {
		nodeClaim, node := f.launch()
		Expect(env.Client.Delete(ctx, nodeClaim)).To(Succeed())

		Expect(f.reconcile(nodeClaim).RequeueAfter).To(BeNumerically(">", 0))
		Expect(get(ctx, node)).To(BeTrue())
		Expect(node.DeletionTimestamp.IsZero()).To(BeFalse())
		Expect(f.reconcile(nodeClaim).RequeueAfter).To(BeNumerically(">", 0))
		Expect(hasFinalizer(ctx, nodeClaim)).To(BeTrue())
		Expect(f.cloud.Calls(fake.MethodDelete)).To(BeZero())

		// The Node termination controller finishes with the Node.
		release(ctx, node)
		Expect(f.reconcile(nodeClaim).RequeueAfter).To(BeNumerically(">", 0))
		Expect(f.cloud.DeleteCalls()).To(ConsistOf(HaveField("Status.ProviderID", nodeClaim.Status.ProviderID)))
		Expect(condition(ctx, nodeClaim, v1.ConditionTypeInstanceTerminating)).To(Equal(metav1.ConditionTrue))
		Expect(hasFinalizer(ctx, nodeClaim)).To(BeTrue())

		Expect(f.reconcile(nodeClaim)).To(BeZero())
		Expect(get(ctx, nodeClaim)).To(BeFalse())
		labels := map[string]string{"nodepool": "default", "capacity_type": v1.CapacityTypeOnDemand}
		Expect(metricValue(f.registry, "karpenter_nodeclaims_terminated_total", labels)).To(Equal(1.0))
		Expect(metricValue(f.registry, "karpenter_nodeclaims_termination_duration_seconds", nil)).To(Equal(1.0))
		Expect(metricValue(f.registry, "karpenter_nodeclaims_instance_termination_duration_seconds", nil)).To(Equal(1.0))
	})

	It("asks the provider about a NodeClaim that never launched, and releases it once it finds no instance", func(ctx context.Context) {
		nodeClaim := f.nodeClaim()
		Expect(env.Client.Delete(ctx, nodeClaim)).To(Succeed())
		Expect(f.reconcile(nodeClaim)).To(BeZero())
		Expect(get(ctx, nodeClaim)).To(BeFalse())
		Expect(f.cloud.DeleteCalls()).To(ConsistOf(HaveField("Name", nodeClaim.Name)))
	})

	It("terminates an instance whose launch the NodeClaim's status never recorded", func(ctx context.Context) {
		// A restart lost the launch cache between CloudProvider.Create and the status write.
		nodeClaim := f.nodeClaim()
		_, err := f.cloud.Create(ctx, nodeClaim)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Delete(ctx, nodeClaim)).To(Succeed())

		Expect(f.reconcile(nodeClaim).RequeueAfter).To(BeNumerically(">", 0))
		Expect(hasFinalizer(ctx, nodeClaim)).To(BeTrue())
		Expect(f.cloud.List(ctx)).To(BeEmpty())
		Expect(f.reconcile(nodeClaim)).To(BeZero())
		Expect(get(ctx, nodeClaim)).To(BeFalse())
	})

	It("terminates the instance of a NodeClaim whose Node never registered", func(ctx context.Context) {
		nodeClaim, node := f.launch()
		release(ctx, node)
		Expect(env.Client.Delete(ctx, nodeClaim)).To(Succeed())
		Expect(f.reconcile(nodeClaim).RequeueAfter).To(BeNumerically(">", 0))
		Expect(f.cloud.Calls(fake.MethodDelete)).To(Equal(1))
		Expect(f.reconcile(nodeClaim)).To(BeZero())
		Expect(get(ctx, nodeClaim)).To(BeFalse())
	})

	It("keeps the finalizer while CloudProvider.Delete fails", func(ctx context.Context) {
		nodeClaim, node := f.launch()
		release(ctx, node)
		Expect(env.Client.Delete(ctx, nodeClaim)).To(Succeed())
		f.cloud.InjectError(fake.MethodDelete, errors.New("api unavailable"))
		_, err := f.controller.Reconcile(ctx, requestFor(nodeClaim))
		Expect(err).To(HaveOccurred())
		Expect(f.recorder.WithReason(termination.ReasonFailedTermination)).To(HaveLen(1))
		Expect(hasFinalizer(ctx, nodeClaim)).To(BeTrue())
	})

	It("records the termination timestamp of a NodeClaim with a terminationGracePeriod", func(ctx context.Context) {
		nodeClaim, _ := f.launch(func(nc *v1.NodeClaim) {
			nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		})
		Expect(env.Client.Delete(ctx, nodeClaim)).To(Succeed())
		f.reconcile(nodeClaim)
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		Expect(nodeClaim.Annotations).To(HaveKeyWithValue(v1.NodeClaimTerminationTimestampAnnotationKey,
			nodeClaim.DeletionTimestamp.Add(time.Hour).Format(time.RFC3339)))
	})
})

var _ = Describe("Deadline", func() {
	var f *fixture

	BeforeEach(func() {
		f = newFixture()
	})

	// stamp sets the termination timestamp annotation, as node repair and failing status checks do.
	stamp := func(ctx context.Context, nodeClaim *v1.NodeClaim, at time.Time) {
		stored := nodeClaim.DeepCopy()
		nodeClaim.Annotations = map[string]string{v1.NodeClaimTerminationTimestampAnnotationKey: at.Format(time.RFC3339)}
		Expect(env.Client.Patch(ctx, nodeClaim, client.MergeFrom(stored))).To(Succeed())
	}

	// deadlineOnceDeleted deletes the NodeClaim, which its finalizer keeps, and returns its drain deadline.
	deadlineOnceDeleted := func(ctx context.Context, nodeClaim *v1.NodeClaim) *time.Time {
		Expect(env.Client.Delete(ctx, nodeClaim)).To(Succeed())
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		deadline, err := termination.Deadline(ctx, env.Client, nodeClaim)
		Expect(err).NotTo(HaveOccurred())
		return deadline
	}

	It("honours a termination timestamp on a NodeClaim without a terminationGracePeriod", func(ctx context.Context) {
		nodeClaim, _ := f.launch()
		stamp(ctx, nodeClaim, f.clock.Now())
		Expect(deadlineOnceDeleted(ctx, nodeClaim)).To(HaveValue(BeTemporally("==", f.clock.Now())))
	})

	It("keeps an earlier termination timestamp over the terminationGracePeriod", func(ctx context.Context) {
		nodeClaim, _ := f.launch(func(nc *v1.NodeClaim) {
			nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		})
		stamp(ctx, nodeClaim, f.clock.Now())
		Expect(deadlineOnceDeleted(ctx, nodeClaim)).To(HaveValue(BeTemporally("==", f.clock.Now())))
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		Expect(nodeClaim.Annotations).To(HaveKeyWithValue(v1.NodeClaimTerminationTimestampAnnotationKey, f.clock.Now().Format(time.RFC3339)))
	})

	It("has no deadline for a NodeClaim without a terminationGracePeriod or termination timestamp", func(ctx context.Context) {
		nodeClaim, _ := f.launch()
		Expect(env.Client.Delete(ctx, nodeClaim)).To(Succeed())
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		deadline, err := termination.Deadline(ctx, env.Client, nodeClaim)
		Expect(err).NotTo(HaveOccurred())
		Expect(deadline).To(BeNil())
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		Expect(nodeClaim.Annotations).NotTo(HaveKey(v1.NodeClaimTerminationTimestampAnnotationKey))
	})

	It("doesn't overwrite a termination timestamp stamped since the NodeClaim was read", func(ctx context.Context) {
		nodeClaim, _ := f.launch(func(nc *v1.NodeClaim) {
			nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		})
		Expect(env.Client.Delete(ctx, nodeClaim)).To(Succeed())
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		stale := nodeClaim.DeepCopy()
		stamp(ctx, nodeClaim, f.clock.Now()) // node repair, between the read and the record
		_, err := termination.Deadline(ctx, env.Client, stale)
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "got %v", err)
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		Expect(nodeClaim.Annotations).To(HaveKeyWithValue(v1.NodeClaimTerminationTimestampAnnotationKey, f.clock.Now().Format(time.RFC3339)))
	})
})

var _ = Describe("NodeClaim and Node termination together", func() {
	var f *fixture

	BeforeEach(func() {
		f = newFixture()
	})

	// converge runs both controllers, with the kubelet finishing evicted pods, until neither wants to run
	// again or the rounds run out. It returns how many rounds it took.
	converge := func(ctx context.Context, nodeClaim *v1.NodeClaim, node *corev1.Node) int {
		for round := 1; round <= 10; round++ {
			claimResult := f.reconcile(nodeClaim)
			nodeResult := f.reconcileNode(node)
			finishTerminatingPods(ctx, node)
			if claimResult.IsZero() && nodeResult.IsZero() {
				return round
			}
		}
		return -1
	}

	It("converges when the NodeClaim is deleted", func(ctx context.Context) {
		nodeClaim, node := f.launch()
		pod := runningPod(ctx, node)
		Expect(env.Client.Delete(ctx, nodeClaim)).To(Succeed())
		Expect(converge(ctx, nodeClaim, node)).To(BeNumerically(">", 0))
		Expect(f.kube.UnindexedLists()).To(BeEmpty(), "a Node or NodeClaim lookup listed every one instead of using an index")
		Expect(get(ctx, node)).To(BeFalse())
		Expect(get(ctx, nodeClaim)).To(BeFalse())
		Expect(get(ctx, pod)).To(BeFalse())
		Expect(f.cloud.Calls(fake.MethodDelete)).To(BeNumerically(">=", 2))
	})

	It("converges when the Node is deleted", func(ctx context.Context) {
		nodeClaim, node := f.launch()
		runningPod(ctx, node)
		Expect(env.Client.Delete(ctx, node)).To(Succeed())
		f.reconcileNode(node)
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		Expect(nodeClaim.DeletionTimestamp.IsZero()).To(BeFalse(), "the Node's deletion deletes its NodeClaim")
		Expect(converge(ctx, nodeClaim, node)).To(BeNumerically(">", 0))
		Expect(get(ctx, node)).To(BeFalse())
		Expect(get(ctx, nodeClaim)).To(BeFalse())
		Expect(f.kube.UnindexedLists()).To(BeEmpty(), "a Node or NodeClaim lookup listed every one instead of using an index")
	})
})

func requestFor(obj client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
}

var _ = Describe("Register", func() {
	It("registers both termination controllers with one manager", func(ctx context.Context) {
		mgr, err := manager.New(env.Config, manager.Options{
			Scheme:  env.Scheme,
			Metrics: metricsserver.Options{BindAddress: "0"},
		})
		Expect(err).NotTo(HaveOccurred())
		f := newFixture()
		Expect(f.controller.Register(ctx, mgr)).To(Succeed())
		Expect(f.nodeController.Register(ctx, mgr)).To(Succeed())
		Expect(f.controller.Name()).To(Equal("nodeclaim.termination"))
		Expect(f.nodeController.Name()).To(Equal("node.termination"))
	})
})
