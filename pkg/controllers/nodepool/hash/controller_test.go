package hash_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodepool/hash"
)

var _ = Describe("Hash controller", func() {
	var ctrl *hash.Controller

	BeforeEach(func() { ctrl = hash.NewController(hash.Deps{Client: env.Client}) })
	AfterEach(func(ctx context.Context) {
		Expect(env.Client.DeleteAllOf(ctx, &v1.NodePool{})).To(Succeed())
		Expect(env.Client.DeleteAllOf(ctx, &v1.NodeClaim{})).To(Succeed())
	})

	reconcile := func(ctx context.Context, name string) *v1.NodePool {
		GinkgoHelper()
		np := &v1.NodePool{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, np)).To(Succeed())
		_, err := ctrl.Reconcile(ctx, np)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, np)).To(Succeed())
		return np
	}

	It("annotates the template hash and version, and keeps other annotations", func(ctx context.Context) {
		np := nodePool("pool-a")
		np.Annotations = map[string]string{"owner": "platform"}
		Expect(env.Client.Create(ctx, np)).To(Succeed())

		np = reconcile(ctx, "pool-a")
		Expect(np.Annotations).To(HaveKeyWithValue(v1.NodePoolHashAnnotationKey, np.Hash()))
		Expect(np.Annotations).To(HaveKeyWithValue(v1.NodePoolHashVersionAnnotationKey, "v3"))
		Expect(np.Annotations).To(HaveKeyWithValue("owner", "platform"))

		again := reconcile(ctx, "pool-a")
		Expect(again.ResourceVersion).To(Equal(np.ResourceVersion))
	})

	It("rewrites the hash when the template changes, but not when only requirements do", func(ctx context.Context) {
		Expect(env.Client.Create(ctx, nodePool("pool-a"))).To(Succeed())
		first := reconcile(ctx, "pool-a").Annotations[v1.NodePoolHashAnnotationKey]

		np := &v1.NodePool{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "pool-a"}, np)).To(Succeed())
		np.Spec.Template.Spec.Requirements[0].Values = []string{"arm64"}
		Expect(env.Client.Update(ctx, np)).To(Succeed())
		Expect(reconcile(ctx, "pool-a").Annotations[v1.NodePoolHashAnnotationKey]).To(Equal(first))

		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "pool-a"}, np)).To(Succeed())
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		Expect(env.Client.Update(ctx, np)).To(Succeed())
		Expect(reconcile(ctx, "pool-a").Annotations[v1.NodePoolHashAnnotationKey]).NotTo(Equal(first))
	})

	It("moves claims hashed under another version onto the current hash, unless they have drifted", func(ctx context.Context) {
		np := nodePool("pool-a")
		np.Annotations = map[string]string{v1.NodePoolHashAnnotationKey: "1", v1.NodePoolHashVersionAnnotationKey: "v2"}
		Expect(env.Client.Create(ctx, np)).To(Succeed())
		claim := func(name, version string, drifted bool) {
			nc := &v1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{
					Name:   name,
					Labels: map[string]string{v1.NodePoolLabelKey: "pool-a"},
					Annotations: map[string]string{
						v1.NodePoolHashAnnotationKey: "1", v1.NodePoolHashVersionAnnotationKey: version,
					},
				},
				Spec: v1.NodeClaimSpec{Requirements: np.Spec.Template.Spec.Requirements, NodeClassRef: np.Spec.Template.Spec.NodeClassRef},
			}
			Expect(env.Client.Create(ctx, nc)).To(Succeed())
			if drifted {
				meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
					Type: v1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted", Message: "drifted",
				})
				Expect(env.Client.Status().Update(ctx, nc)).To(Succeed())
			}
		}
		claim("old", "v2", false)
		claim("old-drifted", "v2", true)
		claim("current", v1.NodePoolHashVersion, false)

		want := reconcile(ctx, "pool-a").Hash()
		annotations := func(name string) map[string]string {
			nc := &v1.NodeClaim{}
			Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, nc)).To(Succeed())
			return nc.Annotations
		}
		Expect(annotations("old")).To(HaveKeyWithValue(v1.NodePoolHashAnnotationKey, want))
		Expect(annotations("old")).To(HaveKeyWithValue(v1.NodePoolHashVersionAnnotationKey, v1.NodePoolHashVersion))
		Expect(annotations("old-drifted")).To(HaveKeyWithValue(v1.NodePoolHashAnnotationKey, "1"))
		Expect(annotations("old-drifted")).To(HaveKeyWithValue(v1.NodePoolHashVersionAnnotationKey, v1.NodePoolHashVersion))
		Expect(annotations("current")).To(HaveKeyWithValue(v1.NodePoolHashAnnotationKey, "1"))
	})
})
