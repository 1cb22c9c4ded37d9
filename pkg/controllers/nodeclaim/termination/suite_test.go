package termination_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex/fieldindextest"
	nodetermination "github.com/lathe-autoscaler/lathe/pkg/controllers/node/termination"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/termination"
	eventsfake "github.com/lathe-autoscaler/lathe/pkg/events/fake"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

var env *environment.Environment

func TestTermination(t *testing.T) { suite.Run(t, "NodeClaim Termination") }

var _ = suite.WithEnvironment(&env)

// Every spec starts without NodeClaims or Nodes: the fake provider of each spec hands out the same provider
// IDs.
var _ = AfterEach(func(ctx context.Context) {
	nodeClaims := &v1.NodeClaimList{}
	Expect(env.Client.List(ctx, nodeClaims)).To(Succeed())
	for i := range nodeClaims.Items {
		release(ctx, &nodeClaims.Items[i])
	}
	nodes := &corev1.NodeList{}
	Expect(env.Client.List(ctx, nodes)).To(Succeed())
	for i := range nodes.Items {
		release(ctx, &nodes.Items[i])
	}
})

// release removes the object's finalizers and deletes it.
func release(ctx context.Context, obj client.Object) {
	if len(obj.GetFinalizers()) > 0 {
		obj.SetFinalizers(nil)
		Expect(client.IgnoreNotFound(env.Client.Update(ctx, obj))).To(Succeed())
	}
	Expect(client.IgnoreNotFound(env.Client.Delete(ctx, obj))).To(Succeed())
}

// fixture is what every spec works with: a fresh NodeClaim termination controller (and a Node termination
// controller for the specs that run both), fake provider, clock and recorder. Its context outlives the
// BeforeEach that builds it.
type fixture struct {
	ctx      context.Context
	clock    *clocktesting.FakeClock
	cloud    *fake.CloudProvider
	recorder *eventsfake.Recorder
	registry *prometheus.Registry
	// kube is the controllers' client: it answers Lists by the cache's field indexes, and records Lists of
	// every NodeClaim or Node.
	kube *fieldindextest.Client

	controller     *termination.Controller
	nodeController *nodetermination.Controller
}

func newFixture() *fixture {
	f := &fixture{
		ctx:      context.Background(),
		clock:    clocktesting.NewFakeClock(time.Now().Truncate(time.Second)),
		cloud:    fake.New(instanceType()),
		recorder: &eventsfake.Recorder{},
		registry: prometheus.NewRegistry(),
		kube:     fieldindextest.NewClient(env.Client),
	}
	f.controller = termination.NewController(termination.Deps{
		Client: f.kube, CloudProvider: f.cloud, Clock: f.clock, Recorder: f.recorder, Registerer: f.registry,
	})
	f.nodeController = nodetermination.NewController(nodetermination.Deps{
		Client: f.kube, CloudProvider: f.cloud, Clock: f.clock, Recorder: f.recorder, Registerer: f.registry,
	})
	return f
}

func instanceType() *cloudprovider.InstanceType {
	return &cloudprovider.InstanceType{
		Name:         "m",
		Requirements: scheduling.FromLabels(map[string]string{v1.LabelInstanceType: "m"}),
		Offerings:    cloudprovider.Offerings{{Zone: "z", CapacityType: v1.CapacityTypeOnDemand, Price: 1, Available: true}},
		Capacity:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")},
	}
}

// nodeClaim creates a NodeClaim with the termination finalizer that hasn't launched.
func (f *fixture) nodeClaim(mutate ...func(*v1.NodeClaim)) *v1.NodeClaim {
	nodeClaim := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "default-",
			Labels:       map[string]string{v1.NodePoolLabelKey: "default", v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand},
			Finalizers:   []string{v1.TerminationFinalizer},
		},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			},
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		},
	}
	for _, m := range mutate {
		m(nodeClaim)
	}
	Expect(env.Client.Create(f.ctx, nodeClaim)).To(Succeed())
	return nodeClaim
}

// launch creates a NodeClaim, launches its instance on the fake provider, and creates its registered Node.
func (f *fixture) launch(mutate ...func(*v1.NodeClaim)) (*v1.NodeClaim, *corev1.Node) {
	nodeClaim := f.nodeClaim(mutate...)
	launched, err := f.cloud.Create(f.ctx, nodeClaim)
	Expect(err).NotTo(HaveOccurred())
	nodeClaim.Status.ProviderID = launched.Status.ProviderID
	nodeClaim.Status.NodeName = nodeClaim.Name
	Expect(env.Client.Status().Update(f.ctx, nodeClaim)).To(Succeed())
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:       nodeClaim.Name,
			Labels:     map[string]string{v1.NodePoolLabelKey: "default"},
			Finalizers: []string{v1.TerminationFinalizer},
		},
		Spec: corev1.NodeSpec{ProviderID: nodeClaim.Status.ProviderID},
	}
	Expect(env.Client.Create(f.ctx, node)).To(Succeed())
	return nodeClaim, node
}

func (f *fixture) reconcile(nodeClaim *v1.NodeClaim) reconcile.Result {
	result, err := f.controller.Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nodeClaim)})
	Expect(err).NotTo(HaveOccurred())
	return result
}

func (f *fixture) reconcileNode(node *corev1.Node) reconcile.Result {
	result, err := f.nodeController.Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)})
	Expect(err).NotTo(HaveOccurred())
	return result
}

// get refreshes obj and reports whether it still exists.
func get(ctx context.Context, obj client.Object) bool {
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil
}

func hasFinalizer(ctx context.Context, obj client.Object) bool {
	return get(ctx, obj) && controllerutil.ContainsFinalizer(obj, v1.TerminationFinalizer)
}

func condition(ctx context.Context, nodeClaim *v1.NodeClaim, conditionType string) metav1.ConditionStatus {
	Expect(get(ctx, nodeClaim)).To(BeTrue())
	if c := meta.FindStatusCondition(nodeClaim.Status.Conditions, conditionType); c != nil {
		return c.Status
	}
	return metav1.ConditionUnknown
}

// metricValue sums the metric's series: counter values, or histogram sample counts.
func metricValue(reg *prometheus.Registry, name string, labels map[string]string) float64 {
	families, err := reg.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			if matches(m.GetLabel(), labels) {
				total += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return total
}

func matches(pairs []*dto.LabelPair, want map[string]string) bool {
	found := 0
	for _, p := range pairs {
		if v, ok := want[p.GetName()]; ok && v == p.GetValue() {
			found++
		}
	}
	return found == len(want)
}

// runningPod creates a running, ready pod bound to the node.
func runningPod(ctx context.Context, node *corev1.Node) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pod-", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:   node.Name,
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause"}},
		},
	}
	Expect(env.Client.Create(ctx, pod)).To(Succeed())
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
	return pod
}

// finishTerminatingPods removes the node's terminating pods, as its kubelet would once they stopped.
func finishTerminatingPods(ctx context.Context, node *corev1.Node) {
	list := &corev1.PodList{}
	Expect(env.Client.List(ctx, list, client.MatchingFields{nodetermination.PodNodeNameField: node.Name})).To(Succeed())
	for i := range list.Items {
		if !list.Items[i].DeletionTimestamp.IsZero() {
			Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &list.Items[i], client.GracePeriodSeconds(0)))).To(Succeed())
		}
	}
}
