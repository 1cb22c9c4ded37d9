package interruption_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/interruption"
	eventsfake "github.com/lathe-autoscaler/lathe/pkg/events/fake"
)

// queue is an InterruptionSource that holds messages until they are deleted.
type queue struct {
	mu       sync.Mutex
	messages []cloudprovider.InterruptionMessage
}

func (q *queue) ReceiveInterruptions(context.Context) ([]cloudprovider.InterruptionMessage, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.messages), nil
}

func (q *queue) DeleteInterruption(_ context.Context, id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.messages = slices.DeleteFunc(q.messages, func(m cloudprovider.InterruptionMessage) bool { return m.ID == id })
	return nil
}

func (q *queue) send(msg cloudprovider.InterruptionMessage) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.messages = append(q.messages, msg)
}

var _ = Describe("Interruption", func() {
	var (
		clock      *clocktesting.FakeClock
		source     *queue
		recorder   *eventsfake.Recorder
		registry   *prometheus.Registry
		controller *interruption.Controller
	)

	BeforeEach(func() {
		clock = clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
		source = &queue{}
		recorder = &eventsfake.Recorder{}
		registry = prometheus.NewRegistry()
		controller = interruption.NewController(interruption.Deps{Client: env.Client, Source: source, Clock: clock, Recorder: recorder, Registerer: registry})
	})

	// instance creates a NodeClaim and its Node with the provider ID.
	instance := func(ctx context.Context, providerID string) (*v1.NodeClaim, *corev1.Node) {
		labels := map[string]string{v1.NodePoolLabelKey: "default", v1.CapacityTypeLabelKey: v1.CapacityTypeSpot}
		nodeClaim := &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "default-", Labels: labels, Finalizers: []string{v1.TerminationFinalizer}},
			Spec:       v1.NodeClaimSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpExists}}, NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}},
		}
		Expect(env.Client.Create(ctx, nodeClaim)).To(Succeed())
		nodeClaim.Status.ProviderID = providerID
		Expect(env.Client.Status().Update(ctx, nodeClaim)).To(Succeed())
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeClaim.Name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: providerID}}
		Expect(env.Client.Create(ctx, node)).To(Succeed())
		return nodeClaim, node
	}
	poll := func(ctx context.Context) {
		result, err := controller.Reconcile(ctx, reconcile.Request{})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.RequeueAfter).To(Equal(interruption.DefaultPollInterval))
	}
	deleting := func(ctx context.Context, nodeClaim *v1.NodeClaim) bool {
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		return !nodeClaim.DeletionTimestamp.IsZero()
	}

	DescribeTable("replaces the instance for the kinds that end it",
		func(ctx context.Context, kind cloudprovider.InterruptionKind, reason string) {
			nodeClaim, node := instance(ctx, "fake:///z/"+string(kind))
			source.send(cloudprovider.InterruptionMessage{ID: "1", Kind: kind, ProviderID: nodeClaim.Status.ProviderID, Time: clock.Now()})
			clock.Step(3 * time.Second)
			poll(ctx)

			Expect(deleting(ctx, nodeClaim)).To(BeTrue())
			Expect(recorder.WithReason(reason)).To(ConsistOf(
				HaveField("InvolvedObject", HaveField("Name", nodeClaim.Name)), HaveField("InvolvedObject", HaveField("Name", node.Name))))
			Expect(recorder.WithReason(interruption.ReasonTerminatingOnInterruption)).To(HaveLen(2))
			Expect(source.messages).To(BeEmpty(), "deleted once handled")
			Expect(counterValue(registry, "karpenter_interruption_received_messages_total", map[string]string{"message_type": string(kind)})).To(Equal(1.0))
			Expect(counterValue(registry, "karpenter_interruption_deleted_messages_total", nil)).To(Equal(1.0))
			Expect(counterValue(registry, "karpenter_nodeclaims_disrupted_total",
				map[string]string{"reason": string(kind), "nodepool": "default", "capacity_type": v1.CapacityTypeSpot})).To(Equal(1.0))
			Expect(histogram(registry, "karpenter_interruption_message_queue_duration_seconds")).To(Equal([]float64{3}))
		},
		Entry("spot interruption", cloudprovider.InterruptionSpot, interruption.ReasonSpotInterrupted),
		Entry("scheduled change", cloudprovider.InterruptionScheduledChange, interruption.ReasonInstanceUnhealthy),
		Entry("instance stopped", cloudprovider.InterruptionStopped, interruption.ReasonInstanceStopping),
		Entry("instance terminated", cloudprovider.InterruptionTerminated, interruption.ReasonInstanceTerminating),
		Entry("capacity reservation interrupted", cloudprovider.InterruptionCapacityReservation, interruption.ReasonCapacityReservationInterrupted),
	)

	It("only warns of a rebalance recommendation", func(ctx context.Context) {
		nodeClaim, _ := instance(ctx, "fake:///z/rebalance")
		source.send(cloudprovider.InterruptionMessage{ID: "1", Kind: cloudprovider.InterruptionRebalance, ProviderID: nodeClaim.Status.ProviderID, Time: clock.Now()})
		poll(ctx)
		Expect(deleting(ctx, nodeClaim)).To(BeFalse())
		Expect(recorder.WithReason(interruption.ReasonSpotRebalanceRecommendation)).To(HaveLen(2))
		Expect(recorder.WithReason(interruption.ReasonTerminatingOnInterruption)).To(BeEmpty())
		Expect(source.messages).To(BeEmpty())
	})

	It("deletes messages about instances it doesn't know", func(ctx context.Context) {
		source.send(cloudprovider.InterruptionMessage{ID: "1", Kind: cloudprovider.InterruptionSpot, ProviderID: "fake:///z/unknown", Time: clock.Now()})
		poll(ctx)
		Expect(source.messages).To(BeEmpty())
		Expect(recorder.Events()).To(BeEmpty())
	})

	It("counts and deletes a message about no instance without touching claims not yet launched", func(ctx context.Context) {
		pending, _ := instance(ctx, "")
		source.send(cloudprovider.InterruptionMessage{ID: "1", Kind: cloudprovider.InterruptionSpot, Time: clock.Now()})
		source.send(cloudprovider.InterruptionMessage{ID: "2", Kind: cloudprovider.InterruptionNoOp, Time: clock.Now()})
		poll(ctx)
		Expect(source.messages).To(BeEmpty())
		Expect(deleting(ctx, pending)).To(BeFalse())
		Expect(recorder.Events()).To(BeEmpty())
		Expect(counterValue(registry, "karpenter_interruption_received_messages_total", map[string]string{"message_type": "no_op"})).To(Equal(1.0))
		Expect(counterValue(registry, "karpenter_interruption_deleted_messages_total", nil)).To(Equal(2.0))
	})

	It("deletes an unreadable message without counting it as received", func(ctx context.Context) {
		source.send(cloudprovider.InterruptionMessage{ID: "1", Err: errors.New("not JSON"), Time: clock.Now()})
		clock.Step(3 * time.Second)
		poll(ctx)
		Expect(source.messages).To(BeEmpty())
		Expect(counterValue(registry, "karpenter_interruption_deleted_messages_total", nil)).To(Equal(1.0))
		Expect(histogram(registry, "karpenter_interruption_message_queue_duration_seconds")).To(Equal([]float64{0}), "nothing observed")
		families, err := registry.Gather()
		Expect(err).NotTo(HaveOccurred())
		Expect(families).NotTo(ContainElement(HaveField("GetName()", "karpenter_interruption_received_messages_total")))
	})

	It("keeps a message whose handling failed, to handle it on the next poll", func(ctx context.Context) {
		failing := &failingSource{queue: source, failures: 1}
		controller = interruption.NewController(interruption.Deps{Client: env.Client, Source: failing, Clock: clock, Recorder: recorder, Registerer: registry})
		nodeClaim, _ := instance(ctx, "fake:///z/retry")
		source.send(cloudprovider.InterruptionMessage{ID: "1", Kind: cloudprovider.InterruptionSpot, ProviderID: nodeClaim.Status.ProviderID, Time: clock.Now()})
		_, err := controller.Reconcile(ctx, reconcile.Request{})
		Expect(err).To(HaveOccurred())
		Expect(source.messages).To(HaveLen(1))
		poll(ctx)
		Expect(source.messages).To(BeEmpty())
		Expect(deleting(ctx, nodeClaim)).To(BeTrue())
	})
})

// failingSource fails to delete messages the first times.
type failingSource struct {
	*queue
	failures int
}

func (f *failingSource) DeleteInterruption(ctx context.Context, id string) error {
	if f.failures > 0 {
		f.failures--
		return errors.New("queue unavailable")
	}
	return f.queue.DeleteInterruption(ctx, id)
}

// histogram returns the sample sum of each series of the histogram.
func histogram(reg *prometheus.Registry, name string) []float64 {
	families, err := reg.Gather()
	Expect(err).NotTo(HaveOccurred())
	var sums []float64
	for _, family := range families {
		if family.GetName() == name {
			for _, m := range family.GetMetric() {
				sums = append(sums, m.GetHistogram().GetSampleSum())
			}
		}
	}
	return sums
}
