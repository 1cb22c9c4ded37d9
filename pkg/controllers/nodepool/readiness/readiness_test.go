package readiness_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodepool/readiness"
)

var _ = Describe("Readiness", func() {
	var (
		ctrl *readiness.Controller
		clk  *clocktesting.FakeClock
	)

	BeforeEach(func() {
		clk = clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		ctrl = readiness.NewController(readiness.Deps{Client: env.Client, Clock: clk})
	})
	AfterEach(func(ctx context.Context) { cleanUp(ctx) })

	// reconcile creates np if it is new, reconciles it and returns it as stored.
	reconcile := func(ctx context.Context, np *v1.NodePool) *v1.NodePool {
		GinkgoHelper()
		if np.ResourceVersion == "" {
			Expect(env.Client.Create(ctx, np)).To(Succeed())
		}
		current := getNodePool(ctx, np.Name)
		_, err := ctrl.Reconcile(ctx, current)
		Expect(err).NotTo(HaveOccurred())
		return getNodePool(ctx, np.Name)
	}

	It("is Ready when the spec is valid and the EC2NodeClass is ready", func(ctx context.Context) {
		class := createNodeClass(ctx, "default", metav1.ConditionTrue)
		np := reconcile(ctx, nodePool("pool-a", "default"))

		Expect(condition(np, v1.ConditionTypeValidationSucceeded).Status).To(Equal(metav1.ConditionTrue))
		Expect(condition(np, v1.ConditionTypeNodeClassReady).Status).To(Equal(metav1.ConditionTrue))
		ready := condition(np, v1.ConditionTypeReady)
		Expect(ready.Status).To(Equal(metav1.ConditionTrue))
		Expect(ready.LastTransitionTime.Time.Equal(clk.Now())).To(BeTrue())
		Expect(ready.ObservedGeneration).To(Equal(np.Generation))
		Expect(np.Status.NodeClassObservedGeneration).To(Equal(class.Generation))
	})

	It("follows the EC2NodeClass as it becomes ready and not ready", func(ctx context.Context) {
		class := createNodeClass(ctx, "default", metav1.ConditionFalse)
		np := reconcile(ctx, nodePool("pool-a", "default"))
		classReady := condition(np, v1.ConditionTypeNodeClassReady)
		Expect(classReady.Status).To(Equal(metav1.ConditionFalse))
		Expect(classReady.Reason).To(Equal("NodeClassNotReady"))
		Expect(classReady.Message).To(ContainSubstring("subnets not found"))
		Expect(condition(np, v1.ConditionTypeReady).Status).To(Equal(metav1.ConditionFalse))

		setNodeClassReady(ctx, class, metav1.ConditionTrue)
		clk.Step(time.Minute)
		np = reconcile(ctx, np)
		Expect(condition(np, v1.ConditionTypeNodeClassReady).Status).To(Equal(metav1.ConditionTrue))
		ready := condition(np, v1.ConditionTypeReady)
		Expect(ready.Status).To(Equal(metav1.ConditionTrue))
		Expect(ready.LastTransitionTime.Time.Equal(clk.Now())).To(BeTrue())

		setNodeClassReady(ctx, class, metav1.ConditionFalse)
		np = reconcile(ctx, np)
		Expect(condition(np, v1.ConditionTypeNodeClassReady).Status).To(Equal(metav1.ConditionFalse))
		Expect(condition(np, v1.ConditionTypeReady).Status).To(Equal(metav1.ConditionFalse))
	})

	It("is not ready while the EC2NodeClass has no Ready condition", func(ctx context.Context) {
		createNodeClass(ctx, "default", metav1.ConditionUnknown)
		np := reconcile(ctx, nodePool("pool-a", "default"))
		Expect(condition(np, v1.ConditionTypeNodeClassReady).Reason).To(Equal("NodeClassNotReady"))
		Expect(condition(np, v1.ConditionTypeReady).Status).To(Equal(metav1.ConditionFalse))
	})

	It("sets NodeClassReady False with NodeClassNotFound when the EC2NodeClass is missing", func(ctx context.Context) {
		np := reconcile(ctx, nodePool("pool-a", "missing"))
		classReady := condition(np, v1.ConditionTypeNodeClassReady)
		Expect(classReady.Status).To(Equal(metav1.ConditionFalse))
		Expect(classReady.Reason).To(Equal("NodeClassNotFound"))
		Expect(classReady.Message).To(ContainSubstring(`"missing"`))
		ready := condition(np, v1.ConditionTypeReady)
		Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		Expect(ready.Message).To(Equal("NodeClassReady=False"))
		Expect(condition(np, v1.ConditionTypeValidationSucceeded).Status).To(Equal(metav1.ConditionTrue))

		createNodeClass(ctx, "missing", metav1.ConditionTrue)
		np = reconcile(ctx, np)
		Expect(condition(np, v1.ConditionTypeReady).Status).To(Equal(metav1.ConditionTrue))
	})

	It("sets NodeClassNotFound for node class kinds it does not know", func(ctx context.Context) {
		pool := nodePool("pool-a", "default")
		pool.Spec.Template.Spec.NodeClassRef.Group = "karpenter.kwok.sh"
		pool.Spec.Template.Spec.NodeClassRef.Kind = "KWOKNodeClass"
		np := reconcile(ctx, pool)
		classReady := condition(np, v1.ConditionTypeNodeClassReady)
		Expect(classReady.Reason).To(Equal("NodeClassNotFound"))
		Expect(classReady.Message).To(ContainSubstring("karpenter.kwok.sh/KWOKNodeClass"))
	})

	It("fails validation on a budget schedule that is not valid cron", func(ctx context.Context) {
		createNodeClass(ctx, "default", metav1.ConditionTrue)
		pool := nodePool("pool-a", "default")
		schedule := "61 * * * *"
		pool.Spec.Disruption.Budgets = []v1.Budget{
			{Nodes: "10%"},
			{Nodes: "0", Schedule: &schedule, Duration: &metav1.Duration{Duration: time.Hour}},
		}
		np := reconcile(ctx, pool)
		validation := condition(np, v1.ConditionTypeValidationSucceeded)
		Expect(validation.Status).To(Equal(metav1.ConditionFalse))
		Expect(validation.Reason).To(Equal("NodePoolValidationFailed"))
		Expect(validation.Message).To(ContainSubstring(`budget 1: invalid schedule "61 * * * *"`))
		ready := condition(np, v1.ConditionTypeReady)
		Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		Expect(ready.Message).To(Equal("ValidationSucceeded=False"))

		fixed := "@daily"
		np.Spec.Disruption.Budgets[1].Schedule = &fixed
		Expect(env.Client.Update(ctx, np)).To(Succeed())
		np = reconcile(ctx, np)
		Expect(condition(np, v1.ConditionTypeValidationSucceeded).Status).To(Equal(metav1.ConditionTrue))
		Expect(condition(np, v1.ConditionTypeReady).Status).To(Equal(metav1.ConditionTrue))
	})

	It("fails validation on requirements no node can satisfy together", func(ctx context.Context) {
		createNodeClass(ctx, "default", metav1.ConditionTrue)
		pool := nodePool("pool-a", "default")
		pool.Spec.Template.Spec.Requirements = append(pool.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"amd64", "arm64"}})
		np := reconcile(ctx, pool)
		validation := condition(np, v1.ConditionTypeValidationSucceeded)
		Expect(validation.Status).To(Equal(metav1.ConditionFalse))
		Expect(validation.Message).To(ContainSubstring(`"kubernetes.io/arch"`))
	})

	It("fails validation on a template label that contradicts the requirements", func(ctx context.Context) {
		createNodeClass(ctx, "default", metav1.ConditionTrue)
		pool := nodePool("pool-a", "default")
		pool.Spec.Template.Labels = map[string]string{corev1.LabelArchStable: "s390x"}
		np := reconcile(ctx, pool)
		validation := condition(np, v1.ConditionTypeValidationSucceeded)
		Expect(validation.Status).To(Equal(metav1.ConditionFalse))
		Expect(validation.Message).To(ContainSubstring("kubernetes.io/arch=s390x"))
	})

	It("fails validation on label keys and values the CRD lets through, as Karpenter's runtime validation does", func(ctx context.Context) {
		createNodeClass(ctx, "default", metav1.ConditionTrue)
		pool := nodePool("pool-a", "default")
		pool.Spec.Template.Labels = map[string]string{"bad key": "x"}
		pool.Spec.Template.Spec.Requirements = append(pool.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: "example.com/team", Operator: corev1.NodeSelectorOpIn, Values: []string{strings.Repeat("a", 64)}})
		np := reconcile(ctx, pool)
		validation := condition(np, v1.ConditionTypeValidationSucceeded)
		Expect(validation.Status).To(Equal(metav1.ConditionFalse))
		Expect(validation.Message).To(ContainSubstring(`invalid label key "bad key"`))
		Expect(validation.Message).To(ContainSubstring("for requirement key example.com/team"))
	})

	It("does not patch a pool whose conditions did not change", func(ctx context.Context) {
		createNodeClass(ctx, "default", metav1.ConditionTrue)
		np := reconcile(ctx, nodePool("pool-a", "default"))
		clk.Step(time.Hour)
		again := reconcile(ctx, np)
		Expect(again.ResourceVersion).To(Equal(np.ResourceVersion))
	})

	It("retries soon, without an error, rather than overwrite a concurrent status write", func(ctx context.Context) {
		createNodeClass(ctx, "default", metav1.ConditionTrue)
		Expect(env.Client.Create(ctx, nodePool("pool-a", "default"))).To(Succeed())
		stale := getNodePool(ctx, "pool-a")
		fresh := stale.DeepCopy()
		fresh.Status.Nodes = new(int64)
		Expect(env.Client.Status().Update(ctx, fresh)).To(Succeed())
		result, err := ctrl.Reconcile(ctx, stale)
		Expect(err).NotTo(HaveOccurred())
		Expect(result.RequeueAfter).To(BeNumerically(">", 0))
		Expect(getNodePool(ctx, "pool-a").Status.Conditions).To(BeEmpty(), "the stale write was refused")
	})
})
