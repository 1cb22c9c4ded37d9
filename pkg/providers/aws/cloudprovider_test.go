package aws_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/unavailable"
)

func TestCreateLaunchesTaggedInstanceFromTemplate(t *testing.T) {
	h := newHarness(t)
	nc := nodeClass(t, "create")
	claim := nodeClaim(nc.Name, "on-demand", "m5.large", "m5.xlarge")
	got, err := h.provider.Create(context.Background(), claim)
	if err != nil {
		t.Fatal(err)
	}
	live := h.live()
	if len(live) != 1 {
		t.Fatalf("instances = %d, want 1", len(live))
	}
	in := live[0]
	if got.Status.ProviderID != "aws:///"+in.Zone+"/"+in.ID || in.InstanceType != "m5.large" || in.CapacityType != "on-demand" ||
		got.Labels[v1.LabelInstanceType] != "m5.large" || got.Labels[v1.CapacityTypeLabelKey] != "on-demand" || got.Status.ImageID != "ami-amd64" ||
		got.Status.Allocatable.Cpu().IsZero() || got.Annotations[awsv1.AnnotationEC2NodeClassHash] != "111" {
		t.Fatalf("launched %+v as %+v", in, got)
	}
	for k, want := range map[string]string{
		"karpenter.sh/nodepool": "default", "karpenter.sh/nodeclaim": claim.Name, "karpenter.k8s.aws/ec2nodeclass": nc.Name,
		"kubernetes.io/cluster/demo": "owned", "eks:eks-cluster-name": "demo", "team": "a",
	} {
		if in.Tags[k] != want {
			t.Errorf("tag %s = %q, want %q", k, in.Tags[k], want)
		}
	}
	lt, ok := h.fake.LaunchTemplate(in.LaunchTemplate)
	if !ok || lt.HTTPTokens != "required" || lt.HTTPPutResponseHopLimit != 1 || lt.ImageID != "ami-amd64" || lt.InstanceProfile != "profile-demo" ||
		len(lt.SecurityGroupIDs) != 1 || lt.SecurityGroupIDs[0] != "sg-1" {
		t.Fatalf("launch template %q = %+v", in.LaunchTemplate, lt)
	}
	// A second NodeClaim with the same inputs reuses the template.
	if _, err := h.provider.Create(context.Background(), nodeClaim(nc.Name, "on-demand", "m5.large", "m5.xlarge")); err != nil {
		t.Fatal(err)
	}
	if names := h.fake.LaunchTemplateNames(); len(names) != 1 {
		t.Fatalf("launch templates = %v, want the one reused", names)
	}
}

func TestInsufficientCapacityFallsBackAndTheOfferingReturnsAfterThreeMinutes(t *testing.T) {
	h := newHarness(t)
	nc := nodeClass(t, "ice", func(nc *awsv1.EC2NodeClass) { nc.Status.Subnets = nc.Status.Subnets[:1] })
	h.fake.SetInsufficientCapacity("m5.large", "us-east-1a", "on-demand", true)
	got, err := h.provider.Create(context.Background(), nodeClaim(nc.Name, "on-demand", "m5.large", "m5.xlarge"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1.LabelInstanceType] != "m5.xlarge" {
		t.Fatalf("launched %s, want the next cheapest m5.xlarge", got.Labels[v1.LabelInstanceType])
	}
	available := func() bool {
		its, err := h.provider.GetInstanceTypes(context.Background(), &v1.NodePool{Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nc.Name}}}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range its {
			for _, o := range it.Offerings {
				if it.Name == "m5.large" && o.Zone == "us-east-1a" && o.CapacityType == "on-demand" {
					return o.Available
				}
			}
		}
		t.Fatal("no m5.large on-demand offering in us-east-1a")
		return false
	}
	if available() {
		t.Fatal("the offering without capacity is still available")
	}
	h.clock.Step(unavailable.TTL)
	if !available() {
		t.Fatal("the offering did not return after three minutes")
	}
	// With no capacity left at all, Create says so.
	h.fake.SetInsufficientCapacity("m5.xlarge", "us-east-1a", "on-demand", true)
	_, err = h.provider.Create(context.Background(), nodeClaim(nc.Name, "on-demand", "m5.large", "m5.xlarge"))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("error = %v, want insufficient capacity", err)
	}
}

func TestThrottlingIsRetriedWithoutDuplicateInstances(t *testing.T) {
	h := newHarness(t)
	nc := nodeClass(t, "throttle")
	h.fake.Faults().Throttle("ec2", "CreateFleet", 2)
	if _, err := h.provider.Create(context.Background(), nodeClaim(nc.Name, "on-demand", "m5.large")); err != nil {
		t.Fatal(err)
	}
	if n := len(h.live()); n != 1 {
		t.Fatalf("instances = %d, want 1", n)
	}
	// Two throttled, then launched (the SDK may retry a call whose connection closed: see package fakeaws).
	if n := h.fake.Faults().Calls("ec2", "CreateFleet"); n < 3 {
		t.Fatalf("CreateFleet calls = %d, want 3 or more (two throttled, then launched)", n)
	}
}

func TestCreateIsIdempotentAcrossARestart(t *testing.T) {
	h := newHarness(t)
	nc := nodeClass(t, "crash")
	claim := nodeClaim(nc.Name, "on-demand", "m5.large")
	first, err := h.provider.Create(context.Background(), claim)
	if err != nil {
		t.Fatal(err)
	}
	// The status write is lost: the same provider, and a new one as after a crash, are asked again.
	for _, p := range []*aws.CloudProvider{h.provider, h.newProvider(t)} {
		again, err := p.Create(context.Background(), claim)
		if err != nil {
			t.Fatal(err)
		}
		if again.Status.ProviderID != first.Status.ProviderID {
			t.Fatalf("second create launched %s, first %s", again.Status.ProviderID, first.Status.ProviderID)
		}
	}
	if n := len(h.live()); n != 1 {
		t.Fatalf("instances = %d, want exactly 1", n)
	}
}

func TestNodeClassWithoutSubnetsLaunchesNothing(t *testing.T) {
	h := newHarness(t)
	nc := nodeClass(t, "nosubnets", func(nc *awsv1.EC2NodeClass) {
		nc.Status.Subnets = nil
		msg := "no subnet matches tags karpenter.sh/discovery=demo"
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: awsv1.ConditionTypeSubnetsReady, Status: metav1.ConditionFalse, Reason: "SubnetsNotFound", Message: msg})
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: "SubnetsNotReady", Message: msg})
	})
	_, err := h.provider.Create(context.Background(), nodeClaim(nc.Name, "on-demand", "m5.large"))
	if !cloudprovider.IsNodeClassNotReadyError(err) || !strings.Contains(err.Error(), "karpenter.sh/discovery=demo") {
		t.Fatalf("error = %v, want node class not ready naming the selector", err)
	}
	// Ready without resolved subnets (a status not yet refreshed) also names the selector.
	nc2 := nodeClass(t, "nosubnets2", func(nc *awsv1.EC2NodeClass) { nc.Status.Subnets = nil })
	_, err = h.provider.Create(context.Background(), nodeClaim(nc2.Name, "on-demand", "m5.large"))
	if !cloudprovider.IsNodeClassNotReadyError(err) || !strings.Contains(err.Error(), "tags karpenter.sh/discovery=demo") {
		t.Fatalf("error = %v, want node class not ready naming the selector", err)
	}
	if n := h.fake.Faults().Calls("ec2", "CreateFleet"); n != 0 || len(h.fake.Instances()) != 0 {
		t.Fatalf("CreateFleet calls = %d, instances = %d, want none", n, len(h.fake.Instances()))
	}
}

func TestDeleteGetAndList(t *testing.T) {
	h := newHarness(t)
	nc := nodeClass(t, "delete")
	ctx := context.Background()
	got, err := h.provider.Create(ctx, nodeClaim(nc.Name, "on-demand", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	h.fake.RunInstance(fakeaws.Instance{InstanceType: "m5.large", Zone: "us-east-1a", Tags: map[string]string{"kubernetes.io/cluster/demo": "owned", "karpenter.sh/nodepool": "default"}})
	h.fake.RunInstance(fakeaws.Instance{InstanceType: "m5.large", Zone: "us-east-1a", Tags: map[string]string{"kubernetes.io/cluster/demo": "owned"}}) // not Lathe's
	listed, err := h.provider.List(ctx)
	if err != nil || len(listed) != 2 {
		t.Fatalf("list = %d, %v; want the launched and the leaked instance", len(listed), err)
	}
	if g, err := h.provider.Get(ctx, got.Status.ProviderID); err != nil || g.Name != got.Name || g.Labels[v1.NodePoolLabelKey] != "default" {
		t.Fatalf("get = %+v, %v", g, err)
	}
	if err := h.provider.Delete(ctx, got); err != nil {
		t.Fatalf("first delete = %v, want nil (terminating)", err)
	}
	if err := h.provider.Delete(ctx, got); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("second delete = %v, want not found", err)
	}
	if _, err := h.provider.Get(ctx, got.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("get after delete = %v, want not found", err)
	}
}

func TestIsDrifted(t *testing.T) {
	h := newHarness(t)
	nc := nodeClass(t, "drift")
	ctx := context.Background()
	got, err := h.provider.Create(ctx, nodeClaim(nc.Name, "on-demand", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if reason, err := h.provider.IsDrifted(ctx, got); err != nil || reason != "" {
		t.Fatalf("fresh instance drifted: %q, %v", reason, err)
	}
	nc.Status.AMIs[0].ID = "ami-newer"
	if err := env.Client.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if reason, err := h.provider.IsDrifted(ctx, got); err != nil || reason != aws.DriftAMI {
		t.Fatalf("drift = %q, %v; want AMIDrift", reason, err)
	}
	nc.Annotations[awsv1.AnnotationEC2NodeClassHash] = "222"
	if err := env.Client.Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if reason, err := h.provider.IsDrifted(ctx, got); err != nil || reason != aws.DriftNodeClass {
		t.Fatalf("drift = %q, %v; want NodeClassDrift", reason, err)
	}
}

func TestConcurrentLaunchesShareCreateFleet(t *testing.T) {
	h := newHarness(t)
	nc := nodeClass(t, "batch")
	const n = 10
	var wg sync.WaitGroup
	errs := make([]error, n)
	ids := make([]string, n)
	for i := range n {
		claim := nodeClaim(nc.Name, "on-demand", "m5.large")
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := h.provider.Create(context.Background(), claim)
			errs[i] = err
			if err == nil {
				ids[i] = got.Status.ProviderID
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		seen[ids[i]] = true
	}
	if len(seen) != n || len(h.live()) != n {
		t.Fatalf("distinct instances = %d, live = %d, want %d", len(seen), len(h.live()), n)
	}
	if calls := h.fake.Faults().Calls("ec2", "CreateFleet"); calls >= n {
		t.Fatalf("CreateFleet calls = %d for %d identical launches, want them batched", calls, n)
	}
	claims := map[string]bool{}
	for _, in := range h.live() {
		claims[in.Tags["karpenter.sh/nodeclaim"]] = true
	}
	if len(claims) != n {
		t.Fatalf("nodeclaim tags = %v, want one per instance", claims)
	}
}
