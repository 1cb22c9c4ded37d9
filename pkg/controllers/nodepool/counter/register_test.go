package counter_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodepool/counter"
	"github.com/lathe-autoscaler/lathe/pkg/state"
	"github.com/lathe-autoscaler/lathe/pkg/state/informer"
)

var _ = Describe("Counter in a manager", func() {
	AfterEach(func(ctx context.Context) { cleanUp(ctx) })

	It("recounts a pool when its nodes come and go", func(ctx context.Context) {
		mgr, err := manager.New(env.Config, manager.Options{
			Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		})
		Expect(err).NotTo(HaveOccurred())
		cluster := state.NewCluster(state.Deps{Reader: mgr.GetClient(), Clock: clock.RealClock{}, Registerer: prometheus.NewRegistry()})
		for _, c := range informer.NewControllers(mgr.GetClient(), cluster) {
			Expect(c.Register(ctx, mgr)).To(Succeed())
		}
		ctrl := counter.NewController(counter.Deps{Client: mgr.GetClient(), Cluster: cluster, Registerer: prometheus.NewRegistry()})
		Expect(ctrl.Register(ctx, mgr)).To(Succeed())
		mgrCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(mgr.Start(mgrCtx)).To(Succeed())
		}()
		DeferCleanup(func() { stop(); <-done })

		createNodePool(ctx, "pool-a", nil)
		nc, n := createMachine(ctx, "a-1", "pool-a", resources("4", "16Gi"), true)
		Eventually(func(g Gomega) {
			g.Expect(getNodePool(ctx, "pool-a").Status.Nodes).To(HaveValue(Equal(int64(1))))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

		Expect(env.Client.Delete(ctx, nc)).To(Succeed())
		Expect(env.Client.Delete(ctx, n)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getNodePool(ctx, "pool-a").Status.Nodes).To(HaveValue(Equal(int64(0))))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	})
})
