package counter_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/state"
	"github.com/lathe-autoscaler/lathe/pkg/state/informer"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

// env is the API server the specs run against; it is started once because starting it costs seconds.
var env *environment.Environment

func TestCounter(t *testing.T) { suite.Run(t, "NodePool counter") }

var _ = suite.WithEnvironment(&env)

func resources(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
}

func createNodePool(ctx context.Context, name string, limits corev1.ResourceList) *v1.NodePool {
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
				},
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			}},
			Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration("0s")},
			Limits:     v1.Limits(limits),
		},
	}
	Expect(env.Client.Create(ctx, np)).To(Succeed())
	return np
}

// createMachine creates a launched NodeClaim of the pool and, if withNode, its Node.
func createMachine(ctx context.Context, name, pool string, capacity corev1.ResourceList, withNode bool) (*v1.NodeClaim, *corev1.Node) {
	providerID := "aws:///zone-a/i-" + name
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: pool}},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
			},
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		},
	}
	Expect(env.Client.Create(ctx, nc)).To(Succeed())
	nc.Status.ProviderID = providerID
	nc.Status.Capacity = capacity
	Expect(env.Client.Status().Update(ctx, nc)).To(Succeed())
	if !withNode {
		return nc, nil
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: pool}},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
	}
	Expect(env.Client.Create(ctx, n)).To(Succeed())
	n.Status.Capacity = capacity
	Expect(env.Client.Status().Update(ctx, n)).To(Succeed())
	return nc, n
}

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
}

func getNodePool(ctx context.Context, name string) *v1.NodePool {
	GinkgoHelper()
	np := &v1.NodePool{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, np)).To(Succeed())
	return np
}

// gaugeValue returns the value of the gauge series with the labels, and whether it exists.
func gaugeValue(reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	GinkgoHelper()
	families, err := reg.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if equalLabels(got, labels) {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func cleanUp(ctx context.Context) {
	Expect(env.Client.DeleteAllOf(ctx, &v1.NodeClaim{})).To(Succeed())
	Expect(env.Client.DeleteAllOf(ctx, &corev1.Node{})).To(Succeed())
	Expect(env.Client.DeleteAllOf(ctx, &v1.NodePool{})).To(Succeed())
}

// syncState feeds the cluster state every Node and NodeClaim the API server has, and forgets those it has
// that are gone, through the state's informer controllers.
func syncState(ctx context.Context, cluster *state.Cluster) {
	GinkgoHelper()
	nodes := informer.NewNodeController(informer.NodeDeps{Reader: env.Client, Store: cluster.Nodes})
	claims := informer.NewNodeClaimController(informer.NodeClaimDeps{Reader: env.Client, Store: cluster.Nodes})
	nodeNames, claimNames := map[string]bool{}, map[string]bool{}
	snap := cluster.Snapshot()
	for _, n := range snap.Nodes {
		nodeNames[n.Node.Name] = true
		if n.NodeClaim != nil {
			claimNames[n.NodeClaim.Name] = true
		}
	}
	for _, c := range snap.InFlight {
		claimNames[c.NodeClaim.Name] = true
	}
	nodeList := &corev1.NodeList{}
	Expect(env.Client.List(ctx, nodeList)).To(Succeed())
	for _, n := range nodeList.Items {
		nodeNames[n.Name] = true
	}
	claimList := &v1.NodeClaimList{}
	Expect(env.Client.List(ctx, claimList)).To(Succeed())
	for _, c := range claimList.Items {
		claimNames[c.Name] = true
	}
	for name := range nodeNames {
		_, err := nodes.Reconcile(ctx, request(name))
		Expect(err).NotTo(HaveOccurred())
	}
	for name := range claimNames {
		_, err := claims.Reconcile(ctx, request(name))
		Expect(err).NotTo(HaveOccurred())
	}
}
