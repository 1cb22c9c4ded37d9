package interruption_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/interruption"
	eventsfake "github.com/lathe-autoscaler/lathe/pkg/events/fake"
)

// healthReport is an InstanceHealthSource whose answer tests set.
type healthReport struct {
	mu        sync.Mutex
	unhealthy []cloudprovider.UnhealthyInstance
	err       error
}

func (h *healthReport) UnhealthyInstances(context.Context) ([]cloudprovider.UnhealthyInstance, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.unhealthy), h.err
}

func (h *healthReport) set(unhealthy ...cloudprovider.UnhealthyInstance) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unhealthy = unhealthy
}

// claimedInstance creates an on-demand NodeClaim of NodePool default launched as the provider ID, and its Node.
func claimedInstance(ctx context.Context, providerID string) (*v1.NodeClaim, *corev1.Node) {
	labels := map[string]string{v1.NodePoolLabelKey: "default", v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand}
	nodeClaim := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "default-", Labels: labels, Finalizers: []string{v1.TerminationFinalizer}},
		Spec: v1.NodeClaimSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpExists}},
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}},
	}
	Expect(env.Client.Create(ctx, nodeClaim)).To(Succeed())
	nodeClaim.Status.ProviderID = providerID
	Expect(env.Client.Status().Update(ctx, nodeClaim)).To(Succeed())
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeClaim.Name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	Expect(env.Client.Create(ctx, node)).To(Succeed())
	return nodeClaim, node
}

var _ = Describe("Instance health", func() {
	var (
		clock    *clocktesting.FakeClock
		source   *healthReport
		recorder *eventsfake.Recorder
		registry *prometheus.Registry
		newCtrl  func(dryRun bool) *interruption.HealthController
	)

	BeforeEach(func() {
		clock = clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
		source = &healthReport{}
		recorder = &eventsfake.Recorder{}
		registry = prometheus.NewRegistry()
		newCtrl = func(dryRun bool) *interruption.HealthController {
			return interruption.NewHealthController(interruption.HealthDeps{Client: env.Client, Source: source, Clock: clock,
				Recorder: recorder, Registerer: registry, DryRun: dryRun})
		}
	})

	poll := func(ctx context.Context, c *interruption.HealthController) {
		result, err := c.Reconcile(ctx, reconcile.Request{})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.RequeueAfter).To(Equal(interruption.DefaultHealthInterval))
	}
	unhealthy := func(category string) float64 {
		return counterValue(registry, "karpenter_interruption_instance_status_unhealthy_total", map[string]string{"category": category})
	}
	finding := func(providerID string, kind cloudprovider.InterruptionKind, category string) cloudprovider.UnhealthyInstance {
		return cloudprovider.UnhealthyInstance{ProviderID: providerID, Kind: kind, Category: category, Since: clock.Now().Add(-3 * time.Minute)}
	}

	DescribeTable("replaces an unhealthy instance as an interruption",
		func(ctx context.Context, kind cloudprovider.InterruptionKind, category string, forceful bool) {
			nodeClaim, node := claimedInstance(ctx, "fake:///z/"+string(kind))
			source.set(finding(nodeClaim.Status.ProviderID, kind, category))
			poll(ctx, newCtrl(false))

			Expect(get(ctx, nodeClaim)).To(BeTrue())
			Expect(nodeClaim.DeletionTimestamp.IsZero()).To(BeFalse(), "the NodeClaim is deleted, so its Node is drained and replaced")
			if forceful {
				Expect(nodeClaim.Annotations).To(HaveKeyWithValue(v1.NodeClaimTerminationTimestampAnnotationKey, clock.Now().UTC().Format(time.RFC3339)))
			} else {
				Expect(nodeClaim.Annotations).NotTo(HaveKey(v1.NodeClaimTerminationTimestampAnnotationKey))
			}
			Expect(recorder.WithReason(interruption.ReasonInstanceUnhealthy)).To(ConsistOf(
				HaveField("InvolvedObject", HaveField("Name", nodeClaim.Name)), HaveField("InvolvedObject", HaveField("Name", node.Name))))
			Expect(recorder.WithReason(interruption.ReasonTerminatingOnInterruption)).To(HaveLen(2))
			Expect(counterValue(registry, "karpenter_nodeclaims_disrupted_total",
				map[string]string{"reason": string(kind), "nodepool": "default", "capacity_type": v1.CapacityTypeOnDemand})).To(Equal(1.0))
			Expect(unhealthy(category)).To(Equal(1.0))
		},
		Entry("instance status", cloudprovider.InterruptionInstanceStatus, "InstanceStatus", true),
		Entry("system status", cloudprovider.InterruptionSystemStatus, "SystemStatus", true),
		Entry("scheduled event", cloudprovider.InterruptionEventStatus, "EventStatus", false),
	)

	It("counts an instance and category once while it stays unhealthy, and again after it recovered", func(ctx context.Context) {
		nodeClaim, _ := claimedInstance(ctx, "fake:///z/flaky")
		c := newCtrl(true)
		impaired := finding(nodeClaim.Status.ProviderID, cloudprovider.InterruptionInstanceStatus, "InstanceStatus")
		event := finding(nodeClaim.Status.ProviderID, cloudprovider.InterruptionEventStatus, "EventStatus")

		source.set(impaired, event)
		poll(ctx, c)
		poll(ctx, c)
		Expect(unhealthy("InstanceStatus")).To(Equal(1.0))
		Expect(unhealthy("EventStatus")).To(Equal(1.0))

		source.set(event)
		poll(ctx, c)
		Expect(unhealthy("InstanceStatus")).To(Equal(1.0))
		source.set(impaired, event)
		poll(ctx, c)
		Expect(unhealthy("InstanceStatus")).To(Equal(2.0), "counted again once it failed anew")
		Expect(unhealthy("EventStatus")).To(Equal(1.0), "still the same event")

		Expect(get(ctx, nodeClaim)).To(BeTrue())
		Expect(nodeClaim.DeletionTimestamp.IsZero()).To(BeTrue(), "dry-run leaves the NodeClaim alone")
		Expect(recorder.Events()).To(BeEmpty())
	})

	It("ignores instances the cluster has no NodeClaim for", func(ctx context.Context) {
		source.set(finding("fake:///z/stranger", cloudprovider.InterruptionSystemStatus, "SystemStatus"))
		poll(ctx, newCtrl(false))
		Expect(unhealthy("SystemStatus")).To(BeZero())
		Expect(recorder.Events()).To(BeEmpty())
	})

	It("logs credentials that don't allow the check and keeps polling", func(ctx context.Context) {
		var mu sync.Mutex
		var logs []string
		ctx = log.IntoContext(ctx, funcr.New(func(prefix, args string) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, args)
		}, funcr.Options{}))
		source.err = fmt.Errorf("%w: no ec2:DescribeInstanceStatus", cloudprovider.ErrNotPermitted)
		poll(ctx, newCtrl(false))
		Expect(strings.Join(logs, "\n")).To(ContainSubstring("no ec2:DescribeInstanceStatus"))

		source.err = fmt.Errorf("throttled")
		_, err := newCtrl(false).Reconcile(ctx, reconcile.Request{})
		Expect(err).To(MatchError(ContainSubstring("throttled")), "other errors are retried")
	})
})
