package readiness_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodepool/readiness"
)

var _ = Describe("Readiness in a manager", func() {
	AfterEach(func(ctx context.Context) { cleanUp(ctx) })

	It("re-evaluates the pools that refer to an EC2NodeClass when it changes", func(ctx context.Context) {
		mgr, err := manager.New(env.Config, manager.Options{
			Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		})
		Expect(err).NotTo(HaveOccurred())
		ctrl := readiness.NewController(readiness.Deps{Client: mgr.GetClient(), Clock: clock.RealClock{}})
		Expect(ctrl.Register(ctx, mgr)).To(Succeed())
		mgrCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(mgr.Start(mgrCtx)).To(Succeed())
		}()
		DeferCleanup(func() { stop(); <-done })

		Expect(env.Client.Create(ctx, nodePool("pool-a", "default"))).To(Succeed())
		readyStatus := func() metav1.ConditionStatus {
			np := getNodePool(ctx, "pool-a")
			for _, c := range np.Status.Conditions {
				if c.Type == v1.ConditionTypeReady {
					return c.Status
				}
			}
			return ""
		}
		Eventually(readyStatus).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(metav1.ConditionFalse))

		createNodeClass(ctx, "default", metav1.ConditionTrue)
		Eventually(readyStatus).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(metav1.ConditionTrue))
	})
})
