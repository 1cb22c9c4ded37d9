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
	"github.com/lathe-autoscaler/lathe/pkg/test/suite"
)

var env *environment.Environment

func TestDrift(t *testing.T) { suite.Run(t, "NodeClaim Drift") }

var _ = suite.WithEnvironment(&env)

// Every spec starts without NodeClaims, Nodes or pods.
var _ = AfterEach(func(ctx context.Context) {
	nodeClaims := &v1.NodeClaimList{}
	Expect(env.Client.List(ctx, nodeClaims)).To(Succeed())
	for i := range nodeClaims.Items {
		release(ctx, &nodeClaims.Items[i])
	}
	Expect(env.Client.DeleteAllOf(ctx, &v1.NodePool{})).To(Succeed())
	nodes := &corev1.NodeList{}
	Expect(env.Client.List(ctx, nodes)).To(Succeed())
	for i := range nodes.Items {
		release(ctx, &nodes.Items[i])
	}
	Expect(env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0))).To(Succeed())
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
