package counter_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodepool/counter"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

var _ = Describe("Counter", func() {
	var (
		ctrl *counter.Controller
		reg  *prometheus.Registry
	)

	var cluster *state.Cluster

	BeforeEach(func() {
		reg = prometheus.NewRegistry()
		cluster = state.NewCluster(state.Deps{Reader: env.Client, Clock: clock.RealClock{}, Registerer: prometheus.NewRegistry()})
		ctrl = counter.NewController(counter.Deps{Client: env.Client, Cluster: cluster, Registerer: reg})
	})
	AfterEach(func(ctx context.Context) { cleanUp(ctx) })

	// reconcilePool brings the cluster state up to date with the API server, as its informers would, and
	// recounts the pool.
	reconcilePool := func(ctx context.Context, name string) {
		GinkgoHelper()
		syncState(ctx, cluster)
		_, err := ctrl.Reconcile(ctx, request(name))
		Expect(err).NotTo(HaveOccurred())
	}

	It("sums the capacity of the pool's nodes into status.resources and status.nodes", func(ctx context.Context) {
		createNodePool(ctx, "pool-a", nil)
		createMachine(ctx, "a-1", "pool-a", resources("4", "16Gi"), true)
		createMachine(ctx, "a-2", "pool-a", resources("2", "8Gi"), false) // launched, Node not joined yet
		createMachine(ctx, "b-1", "pool-b", resources("8", "32Gi"), true)

		reconcilePool(ctx, "pool-a")
		np := getNodePool(ctx, "pool-a")
		Expect(np.Status.Nodes).To(HaveValue(Equal(int64(2))))
		Expect(np.Status.Resources.Cpu().String()).To(Equal("6"))
		Expect(np.Status.Resources.Memory().String()).To(Equal("24Gi"))
		nodes := np.Status.Resources["nodes"]
		Expect(nodes.Value()).To(Equal(int64(2)))
	})

	It("leaves out NodeClaims that have not launched and machines being deleted", func(ctx context.Context) {
		createNodePool(ctx, "pool-a", nil)
		createMachine(ctx, "a-1", "pool-a", resources("4", "16Gi"), true)
		deleting, _ := createMachine(ctx, "a-2", "pool-a", resources("2", "8Gi"), true)
		deleting.Finalizers = []string{v1.TerminationFinalizer}
		Expect(env.Client.Update(ctx, deleting)).To(Succeed())
		Expect(env.Client.Delete(ctx, deleting)).To(Succeed())
		unlaunched := &v1.NodeClaim{}
		unlaunched.Name, unlaunched.Labels = "a-3", map[string]string{v1.NodePoolLabelKey: "pool-a"}
		unlaunched.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpExists}}
		unlaunched.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
		Expect(env.Client.Create(ctx, unlaunched)).To(Succeed())

		reconcilePool(ctx, "pool-a")
		np := getNodePool(ctx, "pool-a")
		Expect(np.Status.Nodes).To(HaveValue(Equal(int64(1))))
		Expect(np.Status.Resources.Cpu().String()).To(Equal("4"))

		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(deleting), deleting)).To(Succeed())
		deleting.Finalizers = nil
		Expect(env.Client.Update(ctx, deleting)).To(Succeed())
	})

	It("updates the status when a node goes away", func(ctx context.Context) {
		createNodePool(ctx, "pool-a", nil)
		createMachine(ctx, "a-1", "pool-a", resources("4", "16Gi"), true)
		nc, n := createMachine(ctx, "a-2", "pool-a", resources("2", "8Gi"), true)
		reconcilePool(ctx, "pool-a")
		Expect(getNodePool(ctx, "pool-a").Status.Nodes).To(HaveValue(Equal(int64(2))))

		Expect(env.Client.Delete(ctx, nc)).To(Succeed())
		Expect(env.Client.Delete(ctx, n)).To(Succeed())
		reconcilePool(ctx, "pool-a")
		np := getNodePool(ctx, "pool-a")
		Expect(np.Status.Nodes).To(HaveValue(Equal(int64(1))))
		Expect(np.Status.Resources.Cpu().String()).To(Equal("4"))
		Expect(np.Status.Resources.Memory().String()).To(Equal("16Gi"))
	})

	It("leaves out machines marked for deletion or being drained", func(ctx context.Context) {
		createNodePool(ctx, "pool-a", nil)
		createMachine(ctx, "a-1", "pool-a", resources("4", "16Gi"), true)
		marked, _ := createMachine(ctx, "a-2", "pool-a", resources("2", "8Gi"), true)
		_, drained := createMachine(ctx, "a-3", "pool-a", resources("1", "4Gi"), true)
		drained.Spec.Taints = []corev1.Taint{v1.DisruptedNoScheduleTaint}
		Expect(env.Client.Update(ctx, drained)).To(Succeed())
		cluster.Deletions.Mark(marked.Status.ProviderID)

		reconcilePool(ctx, "pool-a")
		np := getNodePool(ctx, "pool-a")
		Expect(np.Status.Nodes).To(HaveValue(Equal(int64(1))))
		Expect(np.Status.Resources.Cpu().String()).To(Equal("4"))
	})

	It("waits for the cluster state to sync", func(ctx context.Context) {
		createNodePool(ctx, "pool-a", nil)
		createMachine(ctx, "a-1", "pool-a", resources("4", "16Gi"), true)
		result, err := ctrl.Reconcile(ctx, request("pool-a"))
		Expect(err).NotTo(HaveOccurred())
		Expect(result.RequeueAfter).To(BeNumerically(">", 0))
		Expect(getNodePool(ctx, "pool-a").Status.Nodes).To(BeNil())
	})

	It("counts a Node of the pool that has no NodeClaim", func(ctx context.Context) {
		createNodePool(ctx, "pool-a", nil)
		nc, _ := createMachine(ctx, "a-1", "pool-a", resources("4", "16Gi"), true)
		Expect(env.Client.Delete(ctx, nc)).To(Succeed())
		reconcilePool(ctx, "pool-a")
		np := getNodePool(ctx, "pool-a")
		Expect(np.Status.Nodes).To(HaveValue(Equal(int64(1))))
		Expect(np.Status.Resources.Cpu().String()).To(Equal("4"))
	})

	It("exports usage for every resource and limits only for those in spec.limits", func(ctx context.Context) {
		createNodePool(ctx, "pool-a", corev1.ResourceList{corev1.ResourceCPU: resources("100", "1Gi")[corev1.ResourceCPU]})
		createMachine(ctx, "a-1", "pool-a", resources("4", "16Gi"), true)
		reconcilePool(ctx, "pool-a")

		usage := func(resourceType string) (float64, bool) {
			return gaugeValue(reg, "karpenter_nodepools_usage", map[string]string{"nodepool": "pool-a", "resource_type": resourceType})
		}
		limit := func(resourceType string) (float64, bool) {
			return gaugeValue(reg, "karpenter_nodepools_limit", map[string]string{"nodepool": "pool-a", "resource_type": resourceType})
		}
		value := func(v float64, found bool) float64 {
			GinkgoHelper()
			Expect(found).To(BeTrue())
			return v
		}
		Expect(value(usage("cpu"))).To(Equal(4.0))
		Expect(value(usage("memory"))).To(Equal(16.0 * 1024 * 1024 * 1024))
		Expect(value(usage("nodes"))).To(Equal(1.0))
		Expect(value(limit("cpu"))).To(Equal(100.0))
		_, found := limit("memory")
		Expect(found).To(BeFalse())

		Expect(env.Client.Delete(ctx, getNodePool(ctx, "pool-a"))).To(Succeed())
		reconcilePool(ctx, "pool-a")
		_, found = usage("cpu")
		Expect(found).To(BeFalse())
		_, found = limit("cpu")
		Expect(found).To(BeFalse())
	})
})
