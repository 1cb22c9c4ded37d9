package nodeclass_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/ami"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/nodeclass"
)

var _ = Describe("The node class controllers in a manager", func() {
	It("make the tutorial class Ready and hashed, and release it when its last NodeClaim goes", func(ctx context.Context) {
		fake := fakeaws.New(fakeaws.Options{}).Start()
		DeferCleanup(fake.Close)
		fake.SeedClusterNetwork(cluster)
		mgr, err := manager.New(env.Config, manager.Options{
			Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		})
		Expect(err).NotTo(HaveOccurred())
		version := ami.ServerVersion(discovery.NewDiscoveryClientForConfigOrDie(env.Config))
		status := nodeclass.NewController(nodeclass.Deps{
			Client: mgr.GetClient(), Clock: clock.RealClock{},
			Providers: nodeclass.NewProviders(fake.AWSConfig(), clock.RealClock{}, cluster, version),
		})
		Expect(status.Register(ctx, mgr)).To(Succeed())
		Expect(nodeclass.NewHashController(mgr.GetClient(), nil).Register(ctx, mgr)).To(Succeed())
		mgrCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(mgr.Start(mgrCtx)).To(Succeed())
		}()
		DeferCleanup(func() { stop(); <-done })

		create(ctx, tutorialClass("managed"))
		stored := &awsv1.EC2NodeClass{}
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "managed"}, stored)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(stored.Status.Conditions, awsv1.ConditionTypeReady)).To(BeTrue())
			g.Expect(stored.Annotations).To(HaveKeyWithValue(awsv1.AnnotationEC2NodeClassHash, stored.Hash(nil)))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		Expect(fake.InstanceProfiles()).To(HaveLen(1))

		claim := nodeClaimOf("managed-claim", "managed")
		Expect(env.Client.Create(ctx, claim)).To(Succeed())
		Expect(env.Client.Delete(ctx, stored)).To(Succeed())
		Consistently(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Name: "managed"}, &awsv1.EC2NodeClass{})
		}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

		// The NodeClaim's deletion wakes the finalizer (its own requeue is ten minutes away).
		Expect(env.Client.Delete(ctx, claim)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: "managed"}, &awsv1.EC2NodeClass{}))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(BeTrue())
		Expect(fake.InstanceProfiles()).To(BeEmpty())
	})
})
