package instance_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instance"
)

// crashAfterBatch launches claims claim-0..n-1 in one batched CreateFleet while every CreateTags fails, as
// if Lathe had crashed after the fleet returned and before the claims were tagged. It returns the fake.
func crashAfterBatch(t *testing.T, n int) (*fakeaws.Running, *ec2.Client, []instance.Override, map[string]string) {
	t.Helper()
	fake := fakeaws.New(fakeaws.Options{}).Start()
	t.Cleanup(fake.Close)
	api := ec2.NewFromConfig(fake.AWSConfig())
	if _, err := api.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("lt"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")}}); err != nil {
		t.Fatal(err)
	}
	overrides := []instance.Override{
		{LaunchTemplate: "lt", InstanceType: "m5.large", Zone: "us-east-1a", SubnetID: "subnet-a", Price: 0.096},
		{LaunchTemplate: "lt", InstanceType: "m5.xlarge", Zone: "us-east-1a", SubnetID: "subnet-a", Price: 0.192},
	}
	tags := map[string]string{instance.ClusterTagKey("demo"): "owned", instance.NodePoolTagKey: "default", instance.NodeClassTagKey: "default"}
	fake.Faults().Fail("ec2", "CreateTags", "InternalError", "the process died", http.StatusInternalServerError, -1)
	before := instance.New(instance.Deps{EC2: api, ClusterName: "demo"})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := before.Create(context.Background(), request(i, overrides, tags)); err != nil {
				t.Errorf("launch %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	fake.Faults().Clear()
	if got := fake.Faults().Calls("ec2", "CreateFleet"); got != 1 {
		t.Fatalf("the batch took %d CreateFleet calls, want 1", got)
	}
	return fake, api, overrides, tags
}

func request(i int, overrides []instance.Override, tags map[string]string) instance.Request {
	return instance.Request{NodeClaimName: fmt.Sprintf("claim-%d", i), NodeClaimUID: fmt.Sprintf("uid-%d", i), CapacityType: "on-demand",
		Overrides: overrides, Tags: tags}
}

// After a crash between a batched CreateFleet and the tagging of its instances, the claims launch again one
// by one (another batch, another client token): each adopts one of the batch's instances, so exactly one
// instance runs per claim.
func TestClaimsAdoptTheInstancesACrashLeftUntagged(t *testing.T) {
	fake, api, overrides, tags := crashAfterBatch(t, 3)
	after := instance.New(instance.Deps{EC2: api, ClusterName: "demo", BatchIdle: -1})
	owners := map[string]string{}
	for i := range 3 {
		in, err := after.Create(context.Background(), request(i, overrides, tags))
		if err != nil {
			t.Fatalf("relaunch %d: %v", i, err)
		}
		if prev, dup := owners[in.ID]; dup {
			t.Fatalf("claim-%d and %s share instance %s", i, prev, in.ID)
		}
		owners[in.ID] = fmt.Sprintf("claim-%d", i)
	}
	if got := fake.Faults().Calls("ec2", "CreateFleet"); got != 1 {
		t.Fatalf("CreateFleet called %d times in all, want the batch's 1: claims launched again", got)
	}
	live := 0
	for _, in := range fake.Instances() {
		if in.State == fakeaws.StateTerminated {
			continue
		}
		live++
		if owners[in.ID] == "" || in.Tags[instance.NodeClaimTagKey] != owners[in.ID] {
			t.Errorf("instance %s is tagged %q, adopted by %q", in.ID, in.Tags[instance.NodeClaimTagKey], owners[in.ID])
		}
	}
	if live != 3 {
		t.Fatalf("%d instances run for 3 claims", live)
	}
}

// An untagged instance is only adopted when it could have been launched for the claim, still runs, and no
// NodeClaim recorded it.
func TestClaimsLeaveOrphansTheyCouldNotHaveLaunched(t *testing.T) {
	fake, api, overrides, tags := crashAfterBatch(t, 3)
	var ids []string
	for _, in := range fake.Instances() {
		ids = append(ids, in.ID)
	}
	if _, err := api.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: ids[:1]}); err != nil {
		t.Fatal(err)
	}
	recorded := "aws:///us-east-1a/" + ids[1]
	after := instance.New(instance.Deps{EC2: api, ClusterName: "demo", BatchIdle: -1,
		IsClaimed: func(_ context.Context, providerID string) (bool, error) { return providerID == recorded, nil }})
	otherPool := map[string]string{instance.ClusterTagKey("demo"): "owned", instance.NodePoolTagKey: "other", instance.NodeClassTagKey: "default"}
	in, err := after.Create(context.Background(), request(7, overrides, otherPool))
	if err != nil || in.ID == ids[2] {
		t.Fatalf("a claim of another pool got %+v, %v; want a new instance", in, err)
	}
	in, err = after.Create(context.Background(), request(8, overrides, tags))
	if err != nil || in.ID != ids[2] {
		t.Fatalf("got %+v, %v; want the one adoptable orphan %s (not the terminated %s nor the recorded %s)", in, err, ids[2], ids[0], ids[1])
	}
	in, err = after.Create(context.Background(), request(9, overrides, tags))
	if err != nil || in.ID == ids[0] || in.ID == ids[1] || in.ID == ids[2] {
		t.Fatalf("got %+v, %v; want a new instance once no orphan is left", in, err)
	}
}
