package garbagecollection_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/expect"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

var env *environment.Environment

func TestGarbageCollection(t *testing.T) { suite.Run(t, "NodeClaim Garbage Collection") }

const nodeClassName = "default"

// The simulated provider launches only for a ready EC2NodeClass.
var _ = suite.WithEnvironment(&env, func(ctx SpecContext) {
	tags := map[string]string{"lathe.sh/discovery": "sim"}
	Expect(env.Client.Create(ctx, &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: nodeClassName},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "LatheNodeRole",
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: tags}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: tags}},
		},
	})).To(Succeed())
	nodeClasses := sim.NewNodeClassController(sim.NodeClassDeps{Client: env.Client, Clock: clocktesting.NewFakeClock(time.Now())})
	_, err := nodeClasses.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: nodeClassName}})
	Expect(err).NotTo(HaveOccurred())
})

// Every spec starts without NodeClaims or Nodes.
var _ = AfterEach(func(ctx context.Context) {
	expect.NoMachines(ctx, env.Client)
})

// release removes the object's finalizers and deletes it.
func release(ctx context.Context, obj client.Object) { expect.Released(ctx, env.Client, obj) }

// get refreshes obj and reports whether it still exists.
func get(ctx context.Context, obj client.Object) bool { return expect.Exists(ctx, env.Client, obj) }

// counterValue sums the counter's series that carry the labels.
func counterValue(reg *prometheus.Registry, name string, labels map[string]string) float64 {
	return expect.CounterValue(reg, name, labels)
}
