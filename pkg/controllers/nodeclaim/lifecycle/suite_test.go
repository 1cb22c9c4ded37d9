package lifecycle_test

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex/fieldindextest"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/lifecycle"
	eventsfake "github.com/lathe-autoscaler/lathe/pkg/events/fake"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

func TestLifecycle(t *testing.T) { suite.Run(t, "NodeClaim Lifecycle") }

var (
	ctx        context.Context
	env        *environment.Environment
	kubeClient client.Client
	cp         *fake.CloudProvider
	clk        *clocktesting.FakeClock
	recorder   *eventsfake.Recorder
	registry   *prometheus.Registry
	controller *lifecycle.Controller
)

var _ = suite.WithEnvironment(&env, func(SpecContext) {
	ctx = context.Background()
	kubeClient = fieldindextest.NewClient(env.Client)
})

var _ = BeforeEach(func() {
	cp = fake.New(instanceType("m5.large", resource.MustParse("2"), nil))
	clk = clocktesting.NewFakeClock(time.Now())
	recorder = &eventsfake.Recorder{}
	registry = prometheus.NewRegistry()
	controller = newController(kubeClient)
})

var _ = AfterEach(func() {
	cleanup(&v1.NodeClaimList{})
	cleanup(&corev1.NodeList{})
})

// newController builds the controller under test on c with the suite's fakes; each option then changes its
// dependencies.
func newController(c client.Client, options ...func(*lifecycle.Deps)) *lifecycle.Controller {
	deps := lifecycle.Deps{Client: c, CloudProvider: cp, Clock: clk, Recorder: recorder, Registerer: registry}
	for _, o := range options {
		o(&deps)
	}
	return lifecycle.NewController(deps)
}

// withHints makes registration hold Nodes for hints.
func withHints(h lifecycle.Hints) func(*lifecycle.Deps) {
	return func(d *lifecycle.Deps) { d.Hints = h }
}

// readingFrom gives the controller r to read from the API server after a lost write.
func readingFrom(r client.Reader) func(*lifecycle.Deps) {
	return func(d *lifecycle.Deps) { d.Reader = r }
}

// cleanup removes the finalizers of and deletes every object of the list's kind.
func cleanup(list client.ObjectList) {
	Expect(kubeClient.List(ctx, list)).To(Succeed())
	items, err := meta.ExtractList(list)
	Expect(err).NotTo(HaveOccurred())
	for _, item := range items {
		o := item.(client.Object)
		if len(o.GetFinalizers()) > 0 {
			stored := o.DeepCopyObject().(client.Object)
			o.SetFinalizers(nil)
			Expect(client.IgnoreNotFound(kubeClient.Patch(ctx, o, client.MergeFrom(stored)))).To(Succeed())
		}
		Expect(client.IgnoreNotFound(kubeClient.Delete(ctx, o))).To(Succeed())
	}
	Eventually(func() int {
		Expect(kubeClient.List(ctx, list)).To(Succeed())
		return meta.LenList(list)
	}).Should(BeZero())
}

// instanceType is a fake instance type offered on demand in test-zone-1a, with extra capacity.
func instanceType(name string, cpu resource.Quantity, extra corev1.ResourceList) *cloudprovider.InstanceType {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    cpu,
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	for k, v := range extra {
		capacity[k] = v
	}
	return &cloudprovider.InstanceType{
		Name: name,
		Requirements: scheduling.FromLabels(map[string]string{
			v1.LabelInstanceType: name,
			v1.LabelArch:         "amd64",
		}),
		Offerings: cloudprovider.Offerings{{Zone: "test-zone-1a", CapacityType: v1.CapacityTypeOnDemand, Price: 0.1, Available: true}},
		Capacity:  capacity,
	}
}

// nodeClaimOption changes a NodeClaim before it is created.
type nodeClaimOption func(*v1.NodeClaim)

// newNodeClaim creates a NodeClaim of NodePool "default" in the API server.
func newNodeClaim(opts ...nodeClaimOption) *v1.NodeClaim {
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "default-",
			Labels:       map[string]string{v1.NodePoolLabelKey: "default"},
		},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{
				Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand},
			}, {
				Key: "example.com/team", Operator: corev1.NodeSelectorOpIn, Values: []string{"blue"},
			}},
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		},
	}
	for _, o := range opts {
		o(nc)
	}
	Expect(kubeClient.Create(ctx, nc)).To(Succeed())
	return nc
}

// reconcileNodeClaim runs one reconcile of the claim.
func reconcileNodeClaim(nc *v1.NodeClaim) (reconcile.Result, error) {
	return controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)})
}

// expectReconciled runs one reconcile of the claim, expects no error and returns the result.
func expectReconciled(nc *v1.NodeClaim) reconcile.Result {
	GinkgoHelper()
	res, err := reconcileNodeClaim(nc)
	Expect(err).NotTo(HaveOccurred())
	return res
}

// get returns the stored claim.
func get(nc *v1.NodeClaim) *v1.NodeClaim {
	GinkgoHelper()
	out := &v1.NodeClaim{}
	Expect(kubeClient.Get(ctx, client.ObjectKeyFromObject(nc), out)).To(Succeed())
	return out
}

// getNode returns the stored node.
func getNode(node *corev1.Node) *corev1.Node {
	GinkgoHelper()
	out := &corev1.Node{}
	Expect(kubeClient.Get(ctx, client.ObjectKeyFromObject(node), out)).To(Succeed())
	return out
}

// expectDeleting expects the claim to be gone or marked for deletion.
func expectDeleting(nc *v1.NodeClaim) {
	GinkgoHelper()
	out := &v1.NodeClaim{}
	err := kubeClient.Get(ctx, client.ObjectKeyFromObject(nc), out)
	if apierrors.IsNotFound(err) {
		return
	}
	Expect(err).NotTo(HaveOccurred())
	Expect(out.DeletionTimestamp.IsZero()).To(BeFalse(), "nodeclaim %s is not being deleted", nc.Name)
}

// condition returns the claim's condition of the type, failing when it is missing.
func condition(nc *v1.NodeClaim, conditionType string) metav1.Condition {
	GinkgoHelper()
	c := meta.FindStatusCondition(nc.Status.Conditions, conditionType)
	Expect(c).NotTo(BeNil(), "condition %s missing", conditionType)
	return *c
}

// launched creates a claim and reconciles it until it is Launched, returning the stored claim.
func launched(opts ...nodeClaimOption) *v1.NodeClaim {
	GinkgoHelper()
	nc := newNodeClaim(opts...)
	expectReconciled(nc)
	nc = get(nc)
	Expect(condition(nc, v1.ConditionTypeLaunched).Status).To(Equal(metav1.ConditionTrue))
	return nc
}

// nodeOption changes a Node before it is created.
type nodeOption func(*corev1.Node)

// newNode creates a Node with the claim's provider ID and the unregistered taint, NotReady.
func newNode(nc *v1.NodeClaim, opts ...nodeOption) *corev1.Node {
	GinkgoHelper()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-", Labels: map[string]string{"kubelet.example.com/own": "kept"}},
		Spec: corev1.NodeSpec{
			ProviderID: nc.Status.ProviderID,
			Taints:     []corev1.Taint{v1.UnregisteredNoExecuteTaint},
		},
	}
	for _, o := range opts {
		o(node)
	}
	Expect(kubeClient.Create(ctx, node)).To(Succeed())
	return node
}

// setNodeStatus sets the node's Ready condition and allocatable. A Ready node also loses the not-ready
// taint, as the node lifecycle controller (absent from the test control plane) would do.
func setNodeStatus(node *corev1.Node, ready bool, allocatable corev1.ResourceList) {
	GinkgoHelper()
	node = getNode(node)
	if ready {
		stored := node.DeepCopy()
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		Expect(kubeClient.Patch(ctx, node, client.MergeFrom(stored))).To(Succeed())
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test"}}
	node.Status.Allocatable = allocatable
	node.Status.Capacity = allocatable
	Expect(kubeClient.Status().Update(ctx, node)).To(Succeed())
}

// counter returns the value of the counter with the name and labels from the test registry (0 if absent).
func counter(name string, labels map[string]string) float64 {
	GinkgoHelper()
	families, err := registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
