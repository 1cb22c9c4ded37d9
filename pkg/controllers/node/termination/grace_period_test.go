package termination_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/node/termination"
)

var _ = Describe("Termination grace period", func() {
	var f *fixture

	BeforeEach(func() {
		f = newFixture()
	})

	// deadlineOf reads the termination timestamp annotation back from the NodeClaim.
	deadlineOf := func(ctx context.Context, nodeClaim *v1.NodeClaim) time.Time {
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		deadline, err := time.Parse(time.RFC3339, nodeClaim.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey])
		Expect(err).NotTo(HaveOccurred())
		return deadline
	}

	It("records the deadline on the NodeClaim", func(ctx context.Context) {
		nodeClaim, node := f.launch(withTerminationGracePeriod(10 * time.Minute))
		f.pod(node)
		f.deleteNode(node)
		f.reconcile(node)
		Expect(get(ctx, node)).To(BeTrue())
		// The deadline runs from the NodeClaim's deletion, which the Node's deletion begins.
		Expect(deadlineOf(ctx, nodeClaim)).To(BeTemporally("==", nodeClaim.DeletionTimestamp.Add(10*time.Minute)))
		Expect(f.recorder.WithReason(termination.ReasonTerminationGracePeriodExpiring)).To(HaveLen(1))
	})

	It("deletes a pod at deadline − its terminationGracePeriodSeconds", func(ctx context.Context) {
		nodeClaim, node := f.launch(withTerminationGracePeriod(10 * time.Minute))
		pod := f.pod(node, func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60) })
		f.blockingPDB()
		f.deleteNode(node)

		Expect(f.reconcile(node).RequeueAfter).To(BeNumerically(">", 0))
		Expect(leaving(ctx, pod)).To(BeFalse())
		deadline := deadlineOf(ctx, nodeClaim)

		f.clock.SetTime(deadline.Add(-61 * time.Second))
		Expect(f.reconcile(node).RequeueAfter).To(Equal(time.Second), "requeues for the moment the pod falls due")
		Expect(leaving(ctx, pod)).To(BeFalse())

		f.clock.SetTime(deadline.Add(-60 * time.Second))
		f.reconcile(node)
		Expect(leaving(ctx, pod)).To(BeTrue())
		Expect(pod.DeletionGracePeriodSeconds).To(HaveValue(BeEquivalentTo(60)))
		Expect(f.recorder.WithReason(termination.ReasonDisrupted)).To(HaveLen(1))
		Expect(f.recorder.WithReason(termination.ReasonEvicted)).To(BeEmpty(), "a deleted pod isn't evicted as well")
		Expect(hasFinalizer(ctx, node)).To(BeTrue())
	})

	It("shortens the grace period of pods that can't finish by the deadline", func(ctx context.Context) {
		nodeClaim, node := f.launch(withTerminationGracePeriod(5 * time.Minute))
		pod := f.pod(node, func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3600) })
		f.blockingPDB()
		f.deleteClaim(nodeClaim)
		f.deleteNode(node)
		f.reconcile(node)
		Expect(leaving(ctx, pod)).To(BeTrue())
		Expect(pod.DeletionGracePeriodSeconds).To(HaveValue(And(BeNumerically(">", 0), BeNumerically("<=", 300))))
	})

	It("deletes every pod at the deadline and stops waiting for volumes", func(ctx context.Context) {
		nodeClaim, node := f.launch(withTerminationGracePeriod(5 * time.Minute))
		protected := f.pod(node, func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "db"}
			p.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
		})
		budgeted := f.pod(node)
		f.blockingPDB()
		va := &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "va-"},
			Spec: storagev1.VolumeAttachmentSpec{
				Attacher: "ebs.csi.aws.com",
				NodeName: node.Name,
				Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-" + node.Name)},
			},
		}
		Expect(env.Client.Create(ctx, va)).To(Succeed())
		f.deleteNode(node)

		f.reconcile(node)
		Expect(leaving(ctx, protected)).To(BeFalse())
		Expect(leaving(ctx, budgeted)).To(BeFalse())

		f.clock.SetTime(deadlineOf(ctx, nodeClaim))
		Expect(f.reconcile(node).RequeueAfter).To(BeNumerically(">", 0))
		Expect(get(ctx, protected)).To(BeFalse(), "deleted with no grace period")
		Expect(get(ctx, budgeted)).To(BeFalse(), "deleted with no grace period")
		Expect(condition(ctx, nodeClaim, v1.ConditionTypeDrained)).To(Equal(metav1.ConditionTrue))
		volumes := meta.FindStatusCondition(nodeClaim.Status.Conditions, v1.ConditionTypeVolumesDetached)
		Expect(volumes).NotTo(BeNil())
		Expect(volumes.Status).To(Equal(metav1.ConditionFalse))
		Expect(volumes.Reason).To(Equal("TerminationGracePeriodElapsed"))
		Expect(f.cloud.Calls(fake.MethodDelete)).To(Equal(1))

		Expect(f.reconcile(node)).To(BeZero())
		Expect(get(ctx, node)).To(BeFalse())
	})

	It("force-drains a repaired node whose NodeClaim has no terminationGracePeriod", func(ctx context.Context) {
		// Node repair (and a failing instance status check) stamps the termination timestamp "now" on a
		// NodeClaim whose NodePool may have no terminationGracePeriod; the PDB mustn't hold the drain.
		nodeClaim, node := f.launch(func(nc *v1.NodeClaim) {
			nc.Annotations = map[string]string{v1.NodeClaimTerminationTimestampAnnotationKey: f.clock.Now().Format(time.RFC3339)}
		})
		pod := f.pod(node)
		f.blockingPDB()
		Expect(env.Client.Delete(ctx, nodeClaim)).To(Succeed())
		f.deleteNode(node)

		f.reconcile(node)
		Expect(get(ctx, pod)).To(BeFalse(), "deleted with no grace period despite the PDB")
		Expect(condition(ctx, nodeClaim, v1.ConditionTypeDrained)).To(Equal(metav1.ConditionTrue))
		Expect(f.recorder.WithReason(termination.ReasonDisrupted)).To(HaveLen(1))
	})
})
