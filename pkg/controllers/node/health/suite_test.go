package health_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

var env *environment.Environment

func TestHealth(t *testing.T) { suite.Run(t, "Node Health") }

var _ = suite.WithEnvironment(&env)

// Every spec starts without NodeClaims, Nodes or pods.
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
	Expect(env.Client.DeleteAllOf(ctx, &v1.NodePool{})).To(Succeed())
})

// release removes the object's finalizers and deletes it.
func release(ctx context.Context, obj client.Object) {
	if len(obj.GetFinalizers()) > 0 {
		obj.SetFinalizers(nil)
		Expect(client.IgnoreNotFound(env.Client.Update(ctx, obj))).To(Succeed())
	}
	Expect(client.IgnoreNotFound(env.Client.Delete(ctx, obj))).To(Succeed())
}

// get refreshes obj and reports whether it still exists.
func get(ctx context.Context, obj client.Object) bool {
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil
}

// counterValue sums the counter's series that carry the labels.
func counterValue(reg *prometheus.Registry, name string, labels map[string]string) float64 {
	families, err := reg.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			if hasLabels(m.GetLabel(), labels) {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func hasLabels(pairs []*dto.LabelPair, want map[string]string) bool {
	found := 0
	for _, p := range pairs {
		if v, ok := want[p.GetName()]; ok && v == p.GetValue() {
			found++
		}
	}
	return found == len(want)
}
