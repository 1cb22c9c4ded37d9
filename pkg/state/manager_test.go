package state_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lathe-autoscaler/lathe/pkg/state"
	"github.com/lathe-autoscaler/lathe/pkg/state/informer"
)

var _ = Describe("Informers in a manager", func() {
	AfterEach(func(ctx context.Context) { cleanUp(ctx) })

	It("register, fill the stores from the cache and report synced", func(ctx context.Context) {
		mgr, err := manager.New(env.Config, manager.Options{
			Scheme:                 env.Scheme,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
		})
		Expect(err).NotTo(HaveOccurred())
		cluster := state.NewCluster(state.Deps{
			Reader: mgr.GetClient(), Clock: clocktesting.NewFakeClock(metav1.Now().Time), Registerer: prometheus.NewRegistry(),
		})
		for _, c := range informer.NewControllers(mgr.GetClient(), cluster) {
			Expect(c.Register(ctx, mgr)).To(Succeed(), c.Name())
		}
		createNodeClaim(ctx, "pool-a-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi"))
		createNode(ctx, "node-1", "pool-a", "aws:///zone-a/i-1", resources("4", "16Gi"))
		createPod(ctx, "p", "node-1", "1", "1Gi", 0)

		mgrCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(mgr.Start(mgrCtx)).To(Succeed())
		}()
		DeferCleanup(func() { stop(); <-done })

		Eventually(func(g Gomega) {
			g.Expect(cluster.Synced(ctx)).To(BeTrue())
			snap := cluster.Snapshot()
			g.Expect(snap.Nodes).To(HaveLen(1))
			g.Expect(snap.Nodes[0].NodeClaim).NotTo(BeNil())
			g.Expect(snap.Nodes[0].Pods).To(HaveLen(1))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	})
})
