package nodeclass_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/ami"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/nodeclass"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

const cluster = "demo"

var env *environment.Environment

func TestNodeClass(t *testing.T) { suite.Run(t, "AWS NodeClass") }

var _ = suite.WithEnvironment(&env)

// recorder keeps what the controller publishes.
type recorder struct{ events []events.Event }

func (r *recorder) Publish(e ...events.Event) { r.events = append(r.events, e...) }

// fixture is one spec's fake AWS (with the tutorial's network seeded), clock and controller.
type fixture struct {
	aws        *fakeaws.Running
	network    fakeaws.ClusterNetwork
	clock      *clocktesting.FakeClock
	recorder   *recorder
	controller *nodeclass.Controller
}

// newFixture's fake enforces Karpenter's controller policy (the controller must work under a role kept from
// Karpenter), unless a spec turns it off with withoutPolicy for what needs more than that policy.
func newFixture(withoutPolicy ...bool) *fixture {
	opts := fakeaws.Options{EnforcePolicy: &fakeaws.KarpenterPolicy{ClusterName: cluster}}
	if len(withoutPolicy) > 0 && withoutPolicy[0] {
		opts.EnforcePolicy = nil
	}
	f := &fixture{aws: fakeaws.New(opts).Start(), recorder: &recorder{}}
	DeferCleanup(f.aws.Close)
	f.network = f.aws.SeedClusterNetwork(cluster)
	f.clock = clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	version := ami.ServerVersion(discovery.NewDiscoveryClientForConfigOrDie(env.Config))
	f.controller = nodeclass.NewController(nodeclass.Deps{
		Client: env.Client, Clock: f.clock, Recorder: f.recorder, ReservedCapacity: true,
		Providers: nodeclass.NewProviders(f.aws.AWSConfig(), f.clock, cluster, version),
	})
	return f
}

// tutorialClass is the tutorial's EC2NodeClass: tag-selected subnets and security groups, al2023@latest.
func tutorialClass(name string) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "KarpenterNodeRole-" + cluster,
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": cluster}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": cluster}}},
		},
	}
}

// create stores the node class and removes it (finalizer included) after the spec.
func create(ctx context.Context, nc *awsv1.EC2NodeClass) {
	ExpectWithOffset(1, env.Client.Create(ctx, nc)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		stored := &awsv1.EC2NodeClass{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), stored); apierrors.IsNotFound(err) {
			return
		}
		patch := client.MergeFrom(stored.DeepCopy())
		stored.Finalizers = nil
		Expect(client.IgnoreNotFound(env.Client.Patch(ctx, stored, patch))).To(Succeed())
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, stored))).To(Succeed())
	})
}

// reconcile runs the controller once on the node class and returns it as stored afterwards.
func (f *fixture) reconcile(ctx context.Context, name string) (reconcile.Result, *awsv1.EC2NodeClass) {
	result, err := f.controller.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	stored := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, stored); apierrors.IsNotFound(err) {
		return result, nil
	}
	return result, stored
}

func condition(nc *awsv1.EC2NodeClass, t string) metav1.Condition {
	c := meta.FindStatusCondition(nc.Status.Conditions, t)
	ExpectWithOffset(1, c).NotTo(BeNil(), "condition %s", t)
	return *c
}

func nodeClaimOf(name, nodeClass string) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}},
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nodeClass},
		},
	}
}
