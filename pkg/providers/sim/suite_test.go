package sim_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

// defaultNodeClass is the EC2NodeClass the specs' NodeClaims launch with; the suite makes it Ready once.
const defaultNodeClass = "default"

var (
	// env is the API server the specs run against; it is started once because starting it costs seconds.
	env *environment.Environment
	// ec2Catalog is the default catalog, loaded once and shared read-only by every spec's provider.
	ec2Catalog cloudprovider.InstanceTypes
)

func TestSim(t *testing.T) { suite.Run(t, "Sim") }

var _ = suite.WithEnvironment(&env, func(ctx SpecContext) {
	var err error
	ec2Catalog, err = catalog.EC2(catalog.EC2Options{})
	Expect(err).NotTo(HaveOccurred())
	Expect(env.Client.Create(ctx, ec2NodeClass(defaultNodeClass))).To(Succeed())
	controller := sim.NewNodeClassController(sim.NodeClassDeps{Client: env.Client, Clock: clocktesting.NewFakeClock(time.Now())})
	_, err = controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: defaultNodeClass}})
	Expect(err).NotTo(HaveOccurred())
	// The API server creates kube-system shortly after it starts.
	Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Name: sim.ConfigMapNamespace}, &corev1.Namespace{})
	}).Should(Succeed())
})

// newProvider returns a provider of the EC2 catalog on a fake clock set to 2026-01-01, its dependencies
// changed by mutate.
func newProvider(mutate ...func(*sim.Deps)) (*clocktesting.FakeClock, *sim.CloudProvider) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	deps := sim.Deps{Client: env.Client, Clock: clock, InstanceTypes: ec2Catalog}
	for _, m := range mutate {
		m(&deps)
	}
	provider, err := sim.New(deps)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return clock, provider
}

// cleanUp deletes every Node (finalizers included) and the lathe-sim ConfigMap.
func cleanUp(ctx context.Context) {
	nodes := &corev1.NodeList{}
	Expect(env.Client.List(ctx, nodes)).To(Succeed())
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if len(node.Finalizers) > 0 {
			patch := client.MergeFrom(node.DeepCopy())
			node.Finalizers = nil
			Expect(client.IgnoreNotFound(env.Client.Patch(ctx, node, patch))).To(Succeed())
		}
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, node))).To(Succeed())
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: sim.ConfigMapNamespace, Name: sim.ConfigMapName}}
	Expect(client.IgnoreNotFound(env.Client.Delete(ctx, cm))).To(Succeed())
}

func ec2NodeClass(name string) *awsv1.EC2NodeClass {
	tags := map[string]string{"lathe.sh/discovery": "sim"}
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "LatheNodeRole",
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: tags}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: tags}},
		},
	}
}

// nodeClaim returns an unsaved NodeClaim of the default NodePool and node class with the requirements.
func nodeClaim(name string, requirements ...v1.NodeSelectorRequirementWithMinValues) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
		Spec: v1.NodeClaimSpec{
			Requirements: requirements,
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: defaultNodeClass},
		},
	}
}

func in(key string, values ...string) v1.NodeSelectorRequirementWithMinValues {
	return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func getNode(ctx context.Context, name string) *corev1.Node {
	node := &corev1.Node{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
	return node
}

func expectNoNode(ctx context.Context, name string) {
	err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "node %q should not exist, got %v", name, err)
}

// expectSameResources checks two resource lists hold equal quantities of the same resources.
func expectSameResources(got, want corev1.ResourceList) {
	ExpectWithOffset(1, got).To(HaveLen(len(want)))
	for name, q := range want {
		have, ok := got[name]
		ExpectWithOffset(1, ok).To(BeTrue(), "missing resource %s", name)
		ExpectWithOffset(1, have.Cmp(q)).To(Equal(0), "resource %s = %s, want %s", name, have.String(), q.String())
	}
}

func catalogType(name string) *cloudprovider.InstanceType {
	for _, it := range ec2Catalog {
		if it.Name == name {
			return it
		}
	}
	Fail("no instance type " + name)
	return nil
}

// offeringAvailable reports whether GetInstanceTypes says the offering is available.
func offeringAvailable(ctx context.Context, provider *sim.CloudProvider, instanceType, zone, capacityType string) bool {
	its, err := provider.GetInstanceTypes(ctx, &v1.NodePool{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	for _, it := range its {
		if it.Name != instanceType {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == capacityType {
				return o.Available
			}
		}
	}
	Fail("no offering " + instanceType + "/" + zone + "/" + capacityType)
	return false
}

func quantity(s string) resource.Quantity { return resource.MustParse(s) }

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

// onDemand allows only on-demand offerings.
func onDemand() scheduling.Requirements {
	return scheduling.FromLabels(map[string]string{v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand})
}
