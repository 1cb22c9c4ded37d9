package aws_test

import (
	"context"
	"testing"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Under Karpenter's controller policy (the harness's fake enforces it), a spot and an on-demand launch for
// two node pools get a template each, tagged for its pool, whose data tags the network interface (and the
// spot request); the instances terminate and the templates are deleted again.
func TestLaunchesOfTwoNodePoolsUnderKarpentersPolicy(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	nc := nodeClass(t, "policy")
	spot := nodeClaim(nc.Name, "spot", "m5.large")
	onDemand := nodeClaim(nc.Name, "on-demand", "m5.large")
	onDemand.Labels[v1.NodePoolLabelKey] = "batch"
	var launched []*v1.NodeClaim
	for _, claim := range []*v1.NodeClaim{spot, onDemand} {
		got, err := h.provider.Create(ctx, claim)
		if err != nil {
			t.Fatalf("%s: %v", claim.Name, err)
		}
		launched = append(launched, got)
	}
	live := h.live()
	if len(live) != 2 || live[0].LaunchTemplate == live[1].LaunchTemplate {
		t.Fatalf("instances = %+v, want two, from a template per node pool", live)
	}
	for _, in := range live {
		lt, _ := h.fake.LaunchTemplate(in.LaunchTemplate)
		pool := in.Tags[v1.NodePoolLabelKey]
		nic := lt.TagSpecifications["network-interface"]
		if nic[v1.NodePoolLabelKey] != pool || nic["kubernetes.io/cluster/demo"] != "owned" || nic["eks:eks-cluster-name"] != "demo" || nic["team"] != "a" {
			t.Errorf("%s: network interface tags = %v", in.CapacityType, nic)
		}
		if _, tagged := lt.TagSpecifications["spot-instances-request"]; tagged != (in.CapacityType == "spot") {
			t.Errorf("%s: spot request tagged = %v", in.CapacityType, tagged)
		}
	}
	for _, claim := range launched {
		if err := h.provider.Delete(ctx, claim); err != nil {
			t.Fatalf("deleting %s: %v", claim.Name, err)
		}
	}
	if live := h.live(); len(live) != 0 {
		t.Fatalf("instances left: %+v", live)
	}
	if err := h.provider.LaunchTemplates().DeleteForNodeClass(ctx, nc); err != nil {
		t.Fatalf("deleting the templates: %v", err)
	}
	if names := h.fake.LaunchTemplateNames(); len(names) != 0 {
		t.Fatalf("templates left: %v", names)
	}
}
