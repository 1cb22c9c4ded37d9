package aws_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/interruption"
	eventsfake "github.com/lathe-autoscaler/lathe/pkg/events/fake"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instance"
)

// An instance EC2 reports impaired is replaced without an interruption queue: the health controller, fed
// by the provider's DescribeInstanceStatus, deletes its NodeClaim and leaves the healthy one alone.
func TestImpairedInstanceIsReplacedWithoutAQueue(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	claims := map[string]*v1.NodeClaim{}
	for _, name := range []string{"impaired", "healthy"} {
		in := h.fake.RunInstance(fakeaws.Instance{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: v1.CapacityTypeOnDemand,
			Tags: map[string]string{instance.ClusterTagKey(clusterName): "owned", instance.NodePoolTagKey: "default"}})
		claim := nodeClaim("health", v1.CapacityTypeOnDemand, "m5.large")
		claim.UID = ""
		if err := env.Client.Create(ctx, claim); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), claim) })
		claim.Status.ProviderID = "aws:///us-east-1a/" + in.ID
		if err := env.Client.Status().Update(ctx, claim); err != nil {
			t.Fatal(err)
		}
		claims[name] = claim
		if name == "impaired" {
			h.fake.SetInstanceHealth(in.ID, fakeaws.InstanceHealth{InstanceStatus: fakeaws.StatusImpaired, ImpairedSince: h.clock.Now().Add(-5 * time.Minute)})
		}
	}
	registry := prometheus.NewRegistry()
	controller := interruption.NewHealthController(interruption.HealthDeps{Client: env.Client, Source: h.provider.InstanceHealth(),
		Clock: h.clock, Recorder: &eventsfake.Recorder{}, Registerer: registry})
	if _, err := controller.Reconcile(ctx, reconcile.Request{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claims["impaired"]), &v1.NodeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("nodeclaim of the impaired instance is still there (%v)", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claims["healthy"]), &v1.NodeClaim{}); err != nil {
		t.Errorf("nodeclaim of the healthy instance: %v, want it kept", err)
	}
	if denied := h.fake.PolicyDenials(); len(denied) > 0 {
		t.Errorf("Karpenter's policy refused %v", denied)
	}
}
