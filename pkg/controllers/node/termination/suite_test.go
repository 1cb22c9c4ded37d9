package termination_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex/fieldindextest"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/node/termination"
	eventsfake "github.com/lathe-autoscaler/lathe/pkg/events/fake"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

var env *environment.Environment

func TestTermination(t *testing.T) { suite.Run(t, "Node Termination") }

var _ = suite.WithEnvironment(&env)

// Every spec starts without NodeClaims, Nodes or VolumeAttachments: the fake provider of each spec hands out
// the same provider IDs.
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
	Expect(env.Client.DeleteAllOf(ctx, &storagev1.VolumeAttachment{})).To(Succeed())
})

// release removes the object's finalizers and deletes it.
func release(ctx context.Context, obj client.Object) {
	if len(obj.GetFinalizers()) > 0 {
		obj.SetFinalizers(nil)
		Expect(client.IgnoreNotFound(env.Client.Update(ctx, obj))).To(Succeed())
	}
	Expect(client.IgnoreNotFound(env.Client.Delete(ctx, obj))).To(Succeed())
}

// fixture is what every spec works with: a fresh controller, fake provider, clock and recorder, and a
// namespace of its own for pods and PDBs. Its context outlives the BeforeEach that builds it.
type fixture struct {
	ctx        context.Context
	clock      *clocktesting.FakeClock
	cloud      *fake.CloudProvider
	recorder   *eventsfake.Recorder
	registry   *prometheus.Registry
	controller *termination.Controller
	namespace  string
}

func newFixture() *fixture {
	ctx := context.Background()
	f := &fixture{
		ctx:      ctx,
		clock:    clocktesting.NewFakeClock(time.Now().Truncate(time.Second)),
		cloud:    fake.New(instanceType()),
		recorder: &eventsfake.Recorder{},
		registry: prometheus.NewRegistry(),
	}
	f.controller = termination.NewController(termination.Deps{
		Client: fieldindextest.NewClient(env.Client), CloudProvider: f.cloud, Clock: f.clock, Recorder: f.recorder, Registerer: f.registry,
	})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "termination-"}}
	Expect(env.Client.Create(ctx, ns)).To(Succeed())
	f.namespace = ns.Name
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

// launch creates a NodeClaim with the finalizer, launches its instance on the fake provider, and creates
// its registered Node.
func (f *fixture) launch(mutate ...func(*v1.NodeClaim)) (*v1.NodeClaim, *corev1.Node) {
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

// withTerminationGracePeriod gives the NodeClaim a terminationGracePeriod.
func withTerminationGracePeriod(d time.Duration) func(*v1.NodeClaim) {
	return func(nc *v1.NodeClaim) { nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: d} }
}

// pod creates a running, ready pod bound to the node.
func (f *fixture) pod(node *corev1.Node, mutate ...func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pod-", Namespace: f.namespace, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeName:   node.Name,
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause"}},
		},
	}
	for _, m := range mutate {
		m(pod)
	}
	phase := pod.Status.Phase
	Expect(env.Client.Create(f.ctx, pod)).To(Succeed())
	pod.Status.Phase = corev1.PodRunning
	if phase != "" {
		pod.Status.Phase = phase
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	Expect(env.Client.Status().Update(f.ctx, pod)).To(Succeed())
	return pod
}

// blockingPDB creates a PodDisruptionBudget that allows no disruption of the fixture's "app: web" pods.
func (f *fixture) blockingPDB() *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.namespace},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
	Expect(env.Client.Create(f.ctx, pdb)).To(Succeed())
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	Expect(env.Client.Status().Update(f.ctx, pdb)).To(Succeed())
	return pdb
}

// deleteNode starts the Node's deletion, as `kubectl delete node` does, and moves the clock up to its deletion
// timestamp.
func (f *fixture) deleteNode(node *corev1.Node) {
	f.delete(node)
}

// deleteClaim starts the NodeClaim's deletion, as disruption does before its Node is deleted, and moves the
// clock up to its deletion timestamp. The termination deadline counts from the claim's deletion: a test that
// asserts the time left must delete the claim itself, before the controller would stamp it a second later.
func (f *fixture) deleteClaim(nodeClaim *v1.NodeClaim) {
	f.delete(nodeClaim)
}

// delete deletes obj and moves the controller's clock up to its deletion timestamp if it lags behind it: the
// API server stamps whole seconds, and a clock still in an earlier second would see more time left until the
// deadline than the grace period gives.
func (f *fixture) delete(obj client.Object) {
	Expect(env.Client.Delete(f.ctx, obj)).To(Succeed())
	Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	if deleted := obj.GetDeletionTimestamp().Time; deleted.After(f.clock.Now()) {
		f.clock.SetTime(deleted)
	}
}

func (f *fixture) reconcile(node *corev1.Node) reconcile.Result {
	result, err := f.controller.Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)})
	Expect(err).NotTo(HaveOccurred())
	return result
}

// finishTerminatingPods removes the node's terminating pods, as its kubelet would once they stopped.
func (f *fixture) finishTerminatingPods(node *corev1.Node) {
	list := &corev1.PodList{}
	Expect(env.Client.List(f.ctx, list, client.MatchingFields{"spec.nodeName": node.Name})).To(Succeed())
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			continue
		}
		Expect(client.IgnoreNotFound(env.Client.Delete(f.ctx, &list.Items[i], client.GracePeriodSeconds(0)))).To(Succeed())
	}
}

// get refreshes obj and reports whether it still exists.
func get(ctx context.Context, obj client.Object) bool {
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil
}

// leaving reports whether the pod is gone or terminating.
func leaving(ctx context.Context, pod *corev1.Pod) bool {
	return !get(ctx, pod) || !pod.DeletionTimestamp.IsZero()
}

func condition(ctx context.Context, nodeClaim *v1.NodeClaim, conditionType string) metav1.ConditionStatus {
	Expect(get(ctx, nodeClaim)).To(BeTrue())
	if c := meta.FindStatusCondition(nodeClaim.Status.Conditions, conditionType); c != nil {
		return c.Status
	}
	return metav1.ConditionUnknown
}

func hasFinalizer(ctx context.Context, obj client.Object) bool {
	return get(ctx, obj) && controllerutil.ContainsFinalizer(obj, v1.TerminationFinalizer)
}

func requestFor(obj client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
}

// metricValue sums the metric's series: counter values, or histogram and summary sample counts.
func metricValue(reg *prometheus.Registry, name string) float64 {
	families, err := reg.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			total += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount()) + float64(m.GetSummary().GetSampleCount())
		}
	}
	return total
}

// tolerateDisruption makes the pod tolerate the karpenter.sh/disrupted:NoSchedule taint.
func tolerateDisruption(p *corev1.Pod) {
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{
		Key: v1.DisruptedNoScheduleTaint.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
	})
}
