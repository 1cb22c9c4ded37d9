package instance_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instance"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/unavailable"
)

func TestParseProviderID(t *testing.T) {
	if id, err := instance.ParseProviderID("aws:///us-east-1a/i-0123456789abcdef0"); err != nil || id != "i-0123456789abcdef0" {
		t.Fatalf("= %q, %v", id, err)
	}
	for _, bad := range []string{"", "sim:///us-east-1a/i-1", "aws:///us-east-1a", "aws:///us-east-1a/x-1"} {
		if _, err := instance.ParseProviderID(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestBatchedLaunchesSkipOfferingsWithoutCapacity(t *testing.T) {
	fake := fakeaws.New(fakeaws.Options{}).Start()
	t.Cleanup(fake.Close)
	api := ec2.NewFromConfig(fake.AWSConfig())
	_, err := api.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("lt"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")}})
	if err != nil {
		t.Fatal(err)
	}
	cache := unavailable.New(clocktesting.NewFakeClock(time.Now()))
	p := instance.New(instance.Deps{EC2: api, ClusterName: "demo", Unavailable: cache})
	fake.SetInsufficientCapacity("m5.large", "us-east-1a", "on-demand", true)
	overrides := []instance.Override{
		{LaunchTemplate: "lt", InstanceType: "m5.large", Zone: "us-east-1a", SubnetID: "subnet-a", Price: 0.096},
		{LaunchTemplate: "lt", InstanceType: "m5.xlarge", Zone: "us-east-1a", SubnetID: "subnet-a", Price: 0.192},
	}
	var wg sync.WaitGroup
	got := make([]*instance.Instance, 3)
	errs := make([]error, 3)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = p.Create(context.Background(), instance.Request{NodeClaimName: fmt.Sprintf("claim-%d", i), NodeClaimUID: fmt.Sprintf("uid-%d", i),
				CapacityType: "on-demand", Overrides: overrides, Tags: map[string]string{instance.ClusterTagKey("demo"): "owned", instance.NodePoolTagKey: "default"}})
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i].InstanceType != "m5.xlarge" {
			t.Fatalf("launch %d = %+v, %v", i, got[i], errs[i])
		}
		if found, err := p.FindByNodeClaim(context.Background(), fmt.Sprintf("claim-%d", i)); err != nil || found == nil || found.ID != got[i].ID {
			t.Fatalf("claim-%d finds %+v, %v", i, found, err)
		}
	}
	if !cache.IsUnavailable("m5.large", "us-east-1a", "on-demand") {
		t.Fatal("the offering without capacity is not in the cache")
	}
	fake.SetInsufficientCapacity("m5.xlarge", "us-east-1a", "on-demand", true)
	_, err = p.Create(context.Background(), instance.Request{NodeClaimName: "claim-x", NodeClaimUID: "uid-x", CapacityType: "on-demand", Overrides: overrides})
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("error = %v, want insufficient capacity", err)
	}
}
