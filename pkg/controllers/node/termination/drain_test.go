package termination_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/node/termination"
)

var _ = Describe("Drain", func() {
	var f *fixture

	BeforeEach(func() {
		f = newFixture()
	})

	It("leaves DaemonSet, mirror, tolerating and terminal pods on the node", func(ctx context.Context) {
		nodeClaim, node := f.launch()
		staying := []*corev1.Pod{
			f.pod(node, func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{
					APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: types.UID("ds-uid"), Controller: ptr.To(true),
				}}
			}),
			f.pod(node, func(p *corev1.Pod) {
				p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "static"}
			}),
			f.pod(node, tolerateDisruption),
			f.pod(node, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		}
		f.deleteNode(node)
		f.reconcile(node)
		for _, pod := range staying {
			Expect(leaving(ctx, pod)).To(BeFalse(), pod.Name)
		}
		Expect(f.recorder.WithReason(termination.ReasonEvicted)).To(BeEmpty())
		Expect(condition(ctx, nodeClaim, v1.ConditionTypeDrained)).To(Equal(metav1.ConditionTrue))
		Expect(f.cloud.Calls(fake.MethodDelete)).To(Equal(1))
	})

	It("retries evictions a PodDisruptionBudget refuses, with backoff", func(ctx context.Context) {
		nodeClaim, node := f.launch()
		pod := f.pod(node)
		pdb := f.blockingPDB()
		f.deleteNode(node)

		first := f.reconcile(node).RequeueAfter
		second := f.reconcile(node).RequeueAfter
		Expect(first).To(BeNumerically(">", 0))
		Expect(second).To(BeNumerically(">", first))
		Expect(leaving(ctx, pod)).To(BeFalse())
		Expect(hasFinalizer(ctx, node)).To(BeTrue())
		Expect(condition(ctx, nodeClaim, v1.ConditionTypeDrained)).To(Equal(metav1.ConditionFalse))
		Expect(f.recorder.WithReason(termination.ReasonFailedDraining)).NotTo(BeEmpty())
		Expect(f.cloud.Calls(fake.MethodDelete)).To(BeZero())
		Expect(metricValue(f.registry, "karpenter_pods_eviction_requests_total")).To(Equal(2.0))

		Expect(env.Client.Delete(ctx, pdb)).To(Succeed())
		f.reconcile(node)
		Expect(leaving(ctx, pod)).To(BeTrue())
	})

	It("evicts system-critical pods only after the others are gone", func(ctx context.Context) {
		_, node := f.launch()
		critical := f.pod(node, func(p *corev1.Pod) { p.Spec.PriorityClassName = "system-cluster-critical" })
		nodeCritical := f.pod(node, func(p *corev1.Pod) { p.Spec.PriorityClassName = "system-node-critical" })
		workload := f.pod(node)
		f.deleteNode(node)

		f.reconcile(node)
		Expect(leaving(ctx, workload)).To(BeTrue())
		Expect(leaving(ctx, critical)).To(BeFalse())
		Expect(leaving(ctx, nodeCritical)).To(BeFalse())
		// Still terminating: the critical pods keep waiting.
		f.reconcile(node)
		Expect(leaving(ctx, critical)).To(BeFalse())

		f.finishTerminatingPods(node)
		f.reconcile(node)
		Expect(leaving(ctx, critical)).To(BeTrue())
		Expect(leaving(ctx, nodeCritical)).To(BeTrue())
	})

	It("doesn't evict do-not-disrupt pods when there is no termination grace period", func(ctx context.Context) {
		nodeClaim, node := f.launch()
		protected := f.pod(node, func(p *corev1.Pod) {
			p.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
		})
		workload := f.pod(node)
		f.deleteNode(node)

		f.reconcile(node)
		Expect(leaving(ctx, workload)).To(BeTrue())
		f.finishTerminatingPods(node)
		f.clock.Step(24 * time.Hour)
		Expect(f.reconcile(node).RequeueAfter).To(BeNumerically(">", 0))
		Expect(leaving(ctx, protected)).To(BeFalse())
		Expect(condition(ctx, nodeClaim, v1.ConditionTypeDrained)).To(Equal(metav1.ConditionFalse))
		Expect(hasFinalizer(ctx, node)).To(BeTrue())
	})

	It("evicts pods whose do-not-disrupt duration has elapsed", func(ctx context.Context) {
		_, node := f.launch()
		pod := f.pod(node, func(p *corev1.Pod) {
			p.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "10m"}
		})
		f.deleteNode(node)
		f.reconcile(node)
		Expect(leaving(ctx, pod)).To(BeFalse())
		f.clock.Step(11 * time.Minute)
		f.reconcile(node)
		Expect(leaving(ctx, pod)).To(BeTrue())
	})
})
