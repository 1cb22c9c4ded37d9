package sim_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
)

var _ = Describe("NodeClassController", func() {
	var (
		clock      *clocktesting.FakeClock
		controller *sim.NodeClassController
		provider   *sim.CloudProvider
	)

	BeforeEach(func() {
		clock = clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		controller = sim.NewNodeClassController(sim.NodeClassDeps{Client: env.Client, Clock: clock})
		var err error
		provider, err = sim.New(sim.Deps{Client: env.Client, Clock: clock, InstanceTypes: ec2Catalog})
		Expect(err).NotTo(HaveOccurred())
	})
	AfterEach(func(ctx SpecContext) {
		cleanUp(ctx)
		Expect(env.Client.DeleteAllOf(ctx, &awsv1.EC2NodeClass{}, client.MatchingLabels{"test": "nodeclass"})).To(Succeed())
	})

	create := func(ctx SpecContext, name string) *awsv1.EC2NodeClass {
		nodeClass := ec2NodeClass(name)
		nodeClass.Labels = map[string]string{"test": "nodeclass"}
		Expect(env.Client.Create(ctx, nodeClass)).To(Succeed())
		return nodeClass
	}
	reconcileNodeClass := func(ctx SpecContext, name string) *awsv1.EC2NodeClass {
		_, err := controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
		Expect(err).NotTo(HaveOccurred())
		nodeClass := &awsv1.EC2NodeClass{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, nodeClass)).To(Succeed())
		return nodeClass
	}
	nodeClaimOf := func(name, nodeClass string) *v1.NodeClaim {
		nc := nodeClaim(name, in(v1.LabelInstanceType, "m6g.large"))
		nc.Spec.NodeClassRef.Name = nodeClass
		return nc
	}

	It("resolves every EC2NodeClass to the simulated resources and makes it Ready", func(ctx SpecContext) {
		create(ctx, "resolved")
		nodeClass := reconcileNodeClass(ctx, "resolved")

		Expect(nodeClass.Status.Subnets).To(Equal([]awsv1.Subnet{
			{ID: "subnet-00000000000000001", Zone: "us-east-1a", ZoneID: "use1-az1"},
			{ID: "subnet-00000000000000002", Zone: "us-east-1b", ZoneID: "use1-az2"},
			{ID: "subnet-00000000000000003", Zone: "us-east-1c", ZoneID: "use1-az3"},
		}))
		Expect(nodeClass.Status.SecurityGroups).To(HaveLen(1))
		Expect(nodeClass.Status.AMIs).To(HaveLen(2))
		Expect(nodeClass.Status.AMIs[1].Requirements[0].Key).To(Equal(v1.LabelArch))
		Expect(nodeClass.Status.AMIs[1].Requirements[0].Values).To(Equal([]string{"arm64"}))
		Expect(nodeClass.Status.InstanceProfile).To(Equal("lathe-sim_LatheNodeRole"))
		for _, kind := range []string{awsv1.ConditionTypeSubnetsReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeAMIsReady,
			awsv1.ConditionTypeInstanceProfileReady, awsv1.ConditionTypeValidationSucceeded, awsv1.ConditionTypeReady} {
			cond := meta.FindStatusCondition(nodeClass.Status.Conditions, kind)
			Expect(cond).NotTo(BeNil(), "condition %s", kind)
			Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			Expect(cond.Reason).NotTo(BeEmpty())
			Expect(cond.Message).NotTo(BeEmpty())
			Expect(cond.ObservedGeneration).To(Equal(nodeClass.Generation))
		}

		// A second pass changes nothing.
		clock.Step(time.Hour)
		Expect(reconcileNodeClass(ctx, "resolved").ResourceVersion).To(Equal(nodeClass.ResourceVersion))

		// Instances launched with it boot its images.
		out, err := provider.Create(ctx, nodeClaimOf("graviton", "resolved"))
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Status.ImageID).To(Equal(nodeClass.Status.AMIs[1].ID))
		Expect(out.Labels).To(HaveKeyWithValue(v1.LabelArch, "arm64"))
	})

	It("registers with a manager", func(ctx SpecContext) {
		mgr, err := manager.New(env.Config, manager.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(controller.Register(ctx, mgr)).To(Succeed())
		Expect(controller.Name()).To(Equal("nodeclass.sim"))
	})

	It("uses the instance profile the node class names", func(ctx SpecContext) {
		nodeClass := ec2NodeClass("profiled")
		nodeClass.Labels = map[string]string{"test": "nodeclass"}
		profile := "MyProfile"
		nodeClass.Spec.Role, nodeClass.Spec.InstanceProfile = "", &profile
		Expect(env.Client.Create(ctx, nodeClass)).To(Succeed())
		Expect(reconcileNodeClass(ctx, "profiled").Status.InstanceProfile).To(Equal("MyProfile"))
	})

	It("reads node classes through its client, the cache, not its API reader", func(ctx SpecContext) {
		create(ctx, "cached")
		reconcileNodeClass(ctx, "cached")
		cached, err := sim.New(sim.Deps{Client: env.Client, Reader: noNodeClasses{env.Client}, Clock: clock, InstanceTypes: ec2Catalog})
		Expect(err).NotTo(HaveOccurred())
		_, err = cached.Create(ctx, nodeClaimOf("launched-from-cache", "cached"))
		Expect(err).NotTo(HaveOccurred())
	})

	It("keeps the provider from launching with a node class that isn't Ready or doesn't exist", func(ctx SpecContext) {
		nodeClass := create(ctx, "unresolved")
		_, err := provider.Create(ctx, nodeClaimOf("unknown-readiness", "unresolved"))
		Expect(cloudprovider.IsCreateError(err)).To(BeTrue(), "got %v", err)

		patch := client.MergeFrom(nodeClass.DeepCopy())
		meta.SetStatusCondition(&nodeClass.Status.Conditions, metav1.Condition{
			Type: awsv1.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: "SubnetsNotReady", Message: "no subnets",
		})
		Expect(env.Client.Status().Patch(ctx, nodeClass, patch)).To(Succeed())
		_, err = provider.Create(ctx, nodeClaimOf("not-ready", "unresolved"))
		Expect(cloudprovider.IsNodeClassNotReadyError(err)).To(BeTrue(), "got %v", err)

		_, err = provider.Create(ctx, nodeClaimOf("missing", "does-not-exist"))
		Expect(cloudprovider.IsInsufficientCapacityError(err)).To(BeTrue(), "got %v", err)
		expectNoNode(ctx, "not-ready")
	})
})

// noNodeClasses is an API reader that must not be asked for an EC2NodeClass.
type noNodeClasses struct{ client.Reader }

func (r noNodeClasses) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*awsv1.EC2NodeClass); ok {
		return errors.New("an EC2NodeClass was read through the API reader")
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}
