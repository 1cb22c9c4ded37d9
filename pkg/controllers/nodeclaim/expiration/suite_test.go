package expiration_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/expect"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

var env *environment.Environment

func TestExpiration(t *testing.T) { suite.Run(t, "NodeClaim Expiration") }

var _ = suite.WithEnvironment(&env)

// Every spec starts without NodeClaims, Nodes or pods.
var _ = AfterEach(func(ctx context.Context) {
	expect.NoMachines(ctx, env.Client)
	Expect(env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0))).To(Succeed())
})

// release removes the object's finalizers and deletes it.
func release(ctx context.Context, obj client.Object) { expect.Released(ctx, env.Client, obj) }

// get refreshes obj and reports whether it still exists.
func get(ctx context.Context, obj client.Object) bool { return expect.Exists(ctx, env.Client, obj) }

// counterValue sums the counter's series that carry the labels.
func counterValue(reg *prometheus.Registry, name string, labels map[string]string) float64 {
	return expect.CounterValue(reg, name, labels)
}
