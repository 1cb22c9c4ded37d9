package drift_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
	"github.com/lathe-autoscaler/lathe/pkg/test/expect"
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

var env *environment.Environment

func TestDrift(t *testing.T) { suite.Run(t, "NodeClaim Drift") }

var _ = suite.WithEnvironment(&env)

// Every spec starts without NodeClaims, Nodes or pods.
var _ = AfterEach(func(ctx context.Context) {
	expect.NoMachines(ctx, env.Client)
	Expect(env.Client.DeleteAllOf(ctx, &v1.NodePool{})).To(Succeed())
	Expect(env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0))).To(Succeed())
})

// release removes the object's finalizers and deletes it.
func release(ctx context.Context, obj client.Object) { expect.Released(ctx, env.Client, obj) }

// get refreshes obj and reports whether it still exists.
func get(ctx context.Context, obj client.Object) bool { return expect.Exists(ctx, env.Client, obj) }
