package nomination_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lathe-autoscaler/lathe/pkg/apis/scheme"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/pod/nomination"
	"github.com/lathe-autoscaler/lathe/pkg/state"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

// nodeEventCluster is a cluster of nodes Nodes, each with its NodeClaim, and pods pending pods spread over
// them: each pod is nominated to a claim, and carries a status.nominatedNodeName naming its claim's Node.
func nodeEventCluster(t testing.TB, nodes, pods int) (client.Client, nominations, []*corev1.Node) {
	t.Helper()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	builder := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&corev1.Pod{})
	for _, index := range fieldindex.Indexes() {
		builder = builder.WithIndex(index.Object, index.Field, index.Extract)
	}
	noms := nominations{}
	var objects []client.Object
	var nodeList []*corev1.Node
	for i := range nodes {
		name := fmt.Sprintf("node-%d", i)
		claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("default-%d", i)},
			Status: v1.NodeClaimStatus{ProviderID: "sim:///" + name, NodeName: name}}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "sim:///" + name}}
		objects = append(objects, claim, node)
		nodeList = append(nodeList, node)
	}
	for i := range pods {
		node := i % nodes
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("p-%d", i)},
			Status: corev1.PodStatus{NominatedNodeName: fmt.Sprintf("node-%d", node)}}
		objects = append(objects, pod)
		key := types.NamespacedName{Namespace: "default", Name: pod.Name}
		noms[key] = state.Nomination{Pod: key, Target: state.Target{NodeClaim: fmt.Sprintf("default-%d", node)}, NodeName: fmt.Sprintf("node-%d", node)}
	}
	return builder.WithObjects(objects...).Build(), noms, nodeList
}

// A Node's event brings the pods nominated to its NodeClaim or to the Node itself, and the pods whose
// status.nominatedNodeName names it (a hint Lathe wrote for a nomination that has since ended), and no other.
func TestNodeEventBringsThePodsHeadedThere(t *testing.T) {
	ctx := context.Background()
	kube, noms, nodes := nodeEventCluster(t, 3, 9)
	// p-0 is nominated to node-0's claim; p-3 to node-0 itself; p-6's nomination ended, its hint still names node-0.
	noms[types.NamespacedName{Namespace: "default", Name: "p-3"}] = state.Nomination{
		Pod: types.NamespacedName{Namespace: "default", Name: "p-3"}, Target: state.Target{Node: "node-0"}, NodeName: "node-0"}
	delete(noms, types.NamespacedName{Namespace: "default", Name: "p-6"})
	ctrl := nomination.NewController(nomination.Deps{Client: kube, Nominations: noms, Clock: clocktesting.NewFakeClock(time.Now())})
	var got []string
	for _, r := range ctrl.PodsNominatedTo(ctx, nodes[0]) {
		got = append(got, r.Name)
	}
	slices.Sort(got)
	if want := []string{"p-0", "p-3", "p-6"}; !slices.Equal(got, want) {
		t.Errorf("node-0's event brings %v, want %v", got, want)
	}
}

// BenchmarkNodeEvent is the Node watch's map function reading a manager's cache over a real API server, with
// 250 Nodes and NodeClaims and 1,000 pending pods hinted to them, as a 1,000-pod apply makes it: it runs on
// every change of a Node's taints or initialized label, several times per Node while a pass's Nodes register.
func BenchmarkNodeEvent(b *testing.B) {
	const nodes, pods = 250, 1000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := environment.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 2000, 2000
	mgr, err := manager.New(cfg, manager.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		b.Fatal(err)
	}
	if err := fieldindex.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		b.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	kube := mgr.GetClient()
	noms := nominations{}
	var nodeList []*corev1.Node
	for i := range nodes {
		name := fmt.Sprintf("node-%d", i)
		claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("default-%d", i)}, Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}},
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}}}
		must(b, kube.Create(ctx, claim))
		claim.Status = v1.NodeClaimStatus{ProviderID: "sim:///" + name, NodeName: name}
		must(b, kube.Status().Update(ctx, claim))
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "sim:///" + name}}
		must(b, kube.Create(ctx, node))
		nodeList = append(nodeList, node)
	}
	for i := range pods {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("p-%d", i)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
		must(b, kube.Create(ctx, pod))
		pod.Status.NominatedNodeName = fmt.Sprintf("node-%d", i%nodes)
		must(b, kube.Status().Update(ctx, pod))
		key := client.ObjectKeyFromObject(pod)
		noms[key] = state.Nomination{Pod: key, Target: state.Target{NodeClaim: fmt.Sprintf("default-%d", i%nodes)}}
	}
	ctrl := nomination.NewController(nomination.Deps{Client: kube, Nominations: noms, Clock: clocktesting.NewFakeClock(time.Now())})
	// The cache has caught up once the last Node's event brings its pods.
	for deadline := time.Now().Add(time.Minute); len(ctrl.PodsNominatedTo(ctx, nodeList[nodes-1])) != pods/nodes; {
		if time.Now().After(deadline) {
			b.Fatal("the cache never showed every pod and claim")
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if got := ctrl.PodsNominatedTo(ctx, nodeList[i%nodes]); len(got) != pods/nodes {
			b.Fatalf("%d pods brought, want %d", len(got), pods/nodes)
		}
	}
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
