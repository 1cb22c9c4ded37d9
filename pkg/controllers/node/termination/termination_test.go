package termination_test

import (
	"context"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex/fieldindextest"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/node/termination"
)

var _ = Describe("Node termination", func() {
	var f *fixture

	BeforeEach(func() {
		f = newFixture()
	})

	It("ignores nodes that aren't being deleted", func(ctx context.Context) {
		_, node := f.launch()
		Expect(f.reconcile(node)).To(BeZero())
		Expect(get(ctx, node)).To(BeTrue())
		Expect(node.Spec.Taints).NotTo(ContainElement(HaveField("Key", v1.DisruptedNoScheduleTaint.Key)))
		Expect(f.cloud.Calls(fake.MethodDelete)).To(BeZero())
	})

	It("ignores nodes that Lathe doesn't manage", func(ctx context.Context) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "other-", Finalizers: []string{v1.TerminationFinalizer}}}
		Expect(env.Client.Create(ctx, node)).To(Succeed())
		f.deleteNode(node)
		Expect(f.reconcile(node)).To(BeZero())
		Expect(hasFinalizer(ctx, node)).To(BeTrue())
		Expect(node.Spec.Taints).NotTo(ContainElement(HaveField("Key", v1.DisruptedNoScheduleTaint.Key)))
	})

	It("taints the node and deletes its NodeClaim when the node is deleted", func(ctx context.Context) {
		nodeClaim, node := f.launch()
		f.pod(node)
		f.deleteNode(node)
		f.reconcile(node)
		Expect(get(ctx, node)).To(BeTrue())
		Expect(node.Spec.Taints).To(ContainElement(HaveField("Key", v1.DisruptedNoScheduleTaint.Key)))
		Expect(get(ctx, nodeClaim)).To(BeTrue())
		Expect(nodeClaim.DeletionTimestamp.IsZero()).To(BeFalse())
		// A second pass doesn't add the taint twice.
		f.reconcile(node)
		Expect(get(ctx, node)).To(BeTrue())
		disrupted := 0
		for _, t := range node.Spec.Taints {
			if t.Key == v1.DisruptedNoScheduleTaint.Key {
				disrupted++
			}
		}
		Expect(disrupted).To(Equal(1))
	})

	It("taints the node when the node changed after the copy it read, elsewhere than its taints", func(ctx context.Context) {
		_, node := f.launch()
		f.deleteNode(node)
		stale := node.DeepCopy() // the cache's copy, from before a heartbeat
		heartbeat := node.DeepCopy()
		heartbeat.Labels["example.com/heartbeat"] = "1"
		Expect(env.Client.Patch(ctx, heartbeat, client.MergeFrom(node))).To(Succeed())
		controller := termination.NewController(termination.Deps{
			Client:        &staleNodeClient{Client: fieldindextest.NewClient(env.Client), node: stale},
			CloudProvider: f.cloud, Clock: f.clock, Recorder: f.recorder, Registerer: prometheus.NewRegistry(),
		})

		_, err := controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)})
		Expect(err).NotTo(HaveOccurred())
		Expect(get(ctx, node)).To(BeTrue())
		Expect(node.Spec.Taints).To(ContainElement(HaveField("Key", v1.DisruptedNoScheduleTaint.Key)))
		Expect(node.Labels).To(HaveKeyWithValue("example.com/heartbeat", "1"))
	})

	It("drains, terminates the instance and then removes the finalizer", func(ctx context.Context) {
		nodeClaim, node := f.launch()
		pods := []*corev1.Pod{f.pod(node), f.pod(node)}
		f.deleteNode(node)

		Expect(f.reconcile(node).RequeueAfter).To(BeNumerically(">", 0))
		for _, pod := range pods {
			Expect(leaving(ctx, pod)).To(BeTrue())
		}
		Expect(f.recorder.WithReason(termination.ReasonEvicted)).To(HaveLen(2))
		Expect(condition(ctx, nodeClaim, v1.ConditionTypeDrained)).To(Equal(metav1.ConditionFalse))
		Expect(hasFinalizer(ctx, node)).To(BeTrue())
		Expect(f.cloud.Calls(fake.MethodDelete)).To(BeZero())

		// The kubelet stops the pods; the drain is done and the instance termination starts.
		f.finishTerminatingPods(node)
		Expect(f.reconcile(node).RequeueAfter).To(BeNumerically(">", 0))
		Expect(condition(ctx, nodeClaim, v1.ConditionTypeDrained)).To(Equal(metav1.ConditionTrue))
		Expect(condition(ctx, nodeClaim, v1.ConditionTypeVolumesDetached)).To(Equal(metav1.ConditionTrue))
		Expect(condition(ctx, nodeClaim, v1.ConditionTypeInstanceTerminating)).To(Equal(metav1.ConditionTrue))
		Expect(f.cloud.DeleteCalls()).To(ConsistOf(HaveField("Status.ProviderID", nodeClaim.Status.ProviderID)))
		Expect(hasFinalizer(ctx, node)).To(BeTrue())

		// The instance is gone now: the finalizer goes and the node with it.
		Expect(f.reconcile(node)).To(BeZero())
		Expect(get(ctx, node)).To(BeFalse())
		Expect(metricValue(f.registry, "karpenter_nodes_terminated_total")).To(Equal(1.0))
		Expect(metricValue(f.registry, "karpenter_nodes_drained_total")).To(Equal(1.0))
		Expect(metricValue(f.registry, "karpenter_nodes_termination_duration_seconds")).To(Equal(1.0))
		Expect(metricValue(f.registry, "karpenter_nodes_lifetime_duration_seconds")).To(Equal(1.0))
	})

	It("keeps the finalizer while CloudProvider.Delete fails", func(ctx context.Context) {
		_, node := f.launch()
		f.deleteNode(node)
		f.cloud.InjectError(fake.MethodDelete, errors.New("api unavailable"))
		_, err := f.controller.Reconcile(ctx, requestFor(node))
		Expect(err).To(HaveOccurred())
		Expect(f.recorder.WithReason(termination.ReasonFailedTermination)).To(HaveLen(1))
		Expect(hasFinalizer(ctx, node)).To(BeTrue())

		Expect(f.reconcile(node).RequeueAfter).To(BeNumerically(">", 0)) // terminating
		Expect(hasFinalizer(ctx, node)).To(BeTrue())
		Expect(f.reconcile(node)).To(BeZero()) // gone
		Expect(get(ctx, node)).To(BeFalse())
	})

	It("skips the drain when the instance is already gone", func(ctx context.Context) {
		nodeClaim, node := f.launch()
		pod := f.pod(node)
		Expect(f.cloud.Delete(ctx, nodeClaim)).To(Succeed())
		f.deleteNode(node)
		Expect(f.reconcile(node)).To(BeZero())
		Expect(get(ctx, node)).To(BeFalse())
		Expect(leaving(ctx, pod)).To(BeFalse())
	})

	It("terminates the instance of a node whose NodeClaim is gone", func(ctx context.Context) {
		nodeClaim, node := f.launch()
		nodeClaim.Finalizers = nil
		Expect(env.Client.Update(ctx, nodeClaim)).To(Succeed())
		Expect(env.Client.Delete(ctx, nodeClaim)).To(Succeed())
		f.deleteNode(node)
		Expect(f.reconcile(node).RequeueAfter).To(BeNumerically(">", 0))
		Expect(f.cloud.DeleteCalls()).To(ConsistOf(HaveField("Status.ProviderID", node.Spec.ProviderID)))
		Expect(f.reconcile(node)).To(BeZero())
		Expect(get(ctx, node)).To(BeFalse())
	})

	Context("volume attachments", func() {
		It("waits until the node's volume attachments are gone", func(ctx context.Context) {
			nodeClaim, node := f.launch()
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

			Expect(f.reconcile(node).RequeueAfter).To(BeNumerically(">", 0))
			Expect(condition(ctx, nodeClaim, v1.ConditionTypeDrained)).To(Equal(metav1.ConditionTrue))
			Expect(condition(ctx, nodeClaim, v1.ConditionTypeVolumesDetached)).To(Equal(metav1.ConditionFalse))
			Expect(f.cloud.Calls(fake.MethodDelete)).To(BeZero())
			Expect(f.reconcile(node).RequeueAfter).To(BeNumerically(">", 0))
			Expect(f.cloud.Calls(fake.MethodDelete)).To(BeZero())

			Expect(env.Client.Delete(ctx, va)).To(Succeed())
			f.reconcile(node)
			Expect(condition(ctx, nodeClaim, v1.ConditionTypeVolumesDetached)).To(Equal(metav1.ConditionTrue))
			Expect(f.cloud.Calls(fake.MethodDelete)).To(Equal(1))
		})

		It("doesn't wait for the volumes of pods that stay on the node", func(ctx context.Context) {
			nodeClaim, node := f.launch()
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: f.namespace},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
					VolumeName:  "pv-" + node.Name,
				},
			}
			Expect(env.Client.Create(ctx, pvc)).To(Succeed())
			f.pod(node, tolerateDisruption, func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
				}}}
			})
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
			Expect(condition(ctx, nodeClaim, v1.ConditionTypeVolumesDetached)).To(Equal(metav1.ConditionTrue))
			Expect(f.cloud.Calls(fake.MethodDelete)).To(Equal(1))
		})
	})
})

// staleNodeClient reads one Node as a lagging cache would: the copy it was given, whatever was written since.
type staleNodeClient struct {
	client.Client
	node *corev1.Node
}

func (c *staleNodeClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if n, ok := obj.(*corev1.Node); ok && key.Name == c.node.Name {
		c.node.DeepCopyInto(n)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}
