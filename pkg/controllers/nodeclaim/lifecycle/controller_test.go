package lifecycle_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// One spec runs the controller in a manager, to check the watches and the provider-ID index; every other
// spec calls Reconcile directly.
var _ = Describe("Register", func() {
	It("launches a claim and registers it when its node joins", func() {
		mgr, err := manager.New(env.Config, manager.Options{
			Scheme:  env.Scheme,
			Metrics: metricsserver.Options{BindAddress: "0"},
		})
		Expect(err).NotTo(HaveOccurred())
		running := newController(mgr.GetClient())
		Expect(running.Register(ctx, mgr)).To(Succeed())
		mgrCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mgrCtx) }()
		// Stopped before the suite's AfterEach cleans up, which the controller would otherwise fight.
		defer func() {
			cancel()
			Eventually(done).Should(Receive(BeNil()))
		}()

		nc := newNodeClaim()
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(get(nc).Status.Conditions, v1.ConditionTypeLaunched)).To(BeTrue())
		}).Should(Succeed())
		node := newNode(get(nc))
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(get(nc).Status.Conditions, v1.ConditionTypeRegistered)).To(BeTrue())
		}).Should(Succeed())
		Expect(getNode(node).Labels).To(HaveKeyWithValue(v1.NodeRegisteredLabelKey, "true"))

		setNodeStatus(node, true, nil)
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(get(nc).Status.Conditions, v1.ConditionTypeReady)).To(BeTrue())
		}).Should(Succeed())
	})
})
