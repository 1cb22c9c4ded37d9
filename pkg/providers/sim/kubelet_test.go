package sim_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
)

var _ = Describe("Node class kubelet settings", func() {
	const name = "max-pods-110"
	var provider *sim.CloudProvider

	BeforeEach(func(ctx SpecContext) {
		var clock *clocktesting.FakeClock
		clock, provider = newProvider()
		nodeClass := ec2NodeClass(name)
		nodeClass.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](110)}
		Expect(env.Client.Create(ctx, nodeClass)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(env.Client.Delete(ctx, nodeClass)).To(Succeed()) })
		controller := sim.NewNodeClassController(sim.NodeClassDeps{Client: env.Client, Clock: clock})
		_, err := controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
		Expect(err).NotTo(HaveOccurred())
	})
	AfterEach(func(ctx SpecContext) { cleanUp(ctx) })

	It("shape the instance types a NodePool of the node class is offered", func(ctx SpecContext) {
		pool := &v1.NodePool{Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: name}}}}}
		its, err := provider.GetInstanceTypes(ctx, pool)
		Expect(err).NotTo(HaveOccurred())
		for _, it := range its {
			if it.Name == "c6a.large" {
				Expect(it.Capacity.Pods().Value()).To(BeEquivalentTo(110))
				return
			}
		}
		Fail("no c6a.large")
	})

	It("shape the Node a NodeClaim of the node class gets", func(ctx SpecContext) {
		nc := nodeClaim("kubelet", in(v1.LabelInstanceType, "c6a.large"))
		nc.Spec.NodeClassRef.Name = name
		_, err := provider.Create(ctx, nc)
		Expect(err).NotTo(HaveOccurred())
		node := getNode(ctx, "kubelet")
		Expect(node.Status.Capacity.Pods().Value()).To(BeEquivalentTo(110))
		Expect(node.Status.Allocatable.Memory().Value()).To(BeEquivalentTo((3114 - 11*(110-29)) << 20))
		Expect(node.Status.Allocatable).To(HaveKey(corev1.ResourceEphemeralStorage))
	})
})
