package launchtemplate_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/launchtemplate"
)

func setup(t *testing.T) (*fakeaws.Running, *clocktesting.FakeClock, *launchtemplate.Provider) {
	fake := fakeaws.New(fakeaws.Options{}).Start()
	t.Cleanup(fake.Close)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return fake, clk, launchtemplate.New(ec2.NewFromConfig(fake.AWSConfig()), "demo", clk)
}

func TestEqualInputsShareOneTemplateCreatedOnce(t *testing.T) {
	fake, _, p := setup(t)
	in := launchtemplate.Input{NodeClassName: "default", ImageID: "ami-1", UserData: "doc", SecurityGroupIDs: []string{"sg-2", "sg-1"}}
	var wg sync.WaitGroup
	names := make([]string, 20)
	for i := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name, err := p.Ensure(context.Background(), in)
			if err != nil {
				t.Error(err)
			}
			names[i] = name
		}()
	}
	wg.Wait()
	for _, n := range names {
		if n != names[0] {
			t.Fatalf("names differ: %v", names)
		}
	}
	if got := fake.LaunchTemplateNames(); len(got) != 1 {
		t.Fatalf("templates = %v, want 1", got)
	}
	data, _ := fake.LaunchTemplate(names[0])
	if data.HTTPTokens != "required" || data.HTTPPutResponseHopLimit != 1 || data.HTTPEndpoint != "enabled" {
		t.Fatalf("metadata options = %+v, want IMDSv2 required with hop limit 1", data)
	}
	// The order of security groups doesn't make another template; another image does.
	in.SecurityGroupIDs = []string{"sg-1", "sg-2"}
	if p.Name(in) != names[0] {
		t.Fatal("reordered security groups changed the template")
	}
	in.ImageID = "ami-2"
	if p.Name(in) == names[0] {
		t.Fatal("another image kept the template")
	}
	// A restarted process finds the template instead of creating it again.
	restarted := launchtemplate.New(ec2.NewFromConfig(fake.AWSConfig()), "demo", nil)
	in.ImageID = "ami-1"
	before := fake.Faults().Calls("ec2", "CreateLaunchTemplate")
	if _, err := restarted.Ensure(context.Background(), in); err != nil || fake.Faults().Calls("ec2", "CreateLaunchTemplate") != before {
		t.Fatalf("restart created again: %v, calls %d", err, fake.Faults().Calls("ec2", "CreateLaunchTemplate"))
	}
}

func TestMetadataOptionsFromTheNodeClass(t *testing.T) {
	fake, _, p := setup(t)
	name, err := p.Ensure(context.Background(), launchtemplate.Input{ImageID: "ami-1", Metadata: &awsv1.MetadataOptions{
		HTTPTokens: aws.String("optional"), HTTPPutResponseHopLimit: aws.Int64(2)}})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := fake.LaunchTemplate(name)
	if data.HTTPTokens != "optional" || data.HTTPPutResponseHopLimit != 2 {
		t.Fatalf("metadata options = %+v", data)
	}
}

func TestUnusedTemplatesAreDeleted(t *testing.T) {
	fake, clk, p := setup(t)
	ctx := context.Background()
	used, err := p.Ensure(ctx, launchtemplate.Input{ImageID: "ami-1"})
	if err != nil {
		t.Fatal(err)
	}
	idle, err := p.Ensure(ctx, launchtemplate.Input{ImageID: "ami-2"})
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(launchtemplate.UnusedAfter / 2)
	if _, err := p.Ensure(ctx, launchtemplate.Input{ImageID: "ami-1"}); err != nil {
		t.Fatal(err)
	}
	clk.Step(launchtemplate.UnusedAfter / 2)
	if err := p.DeleteUnused(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.LaunchTemplate(idle); ok {
		t.Fatal("the unused template is still there")
	}
	if _, ok := fake.LaunchTemplate(used); !ok {
		t.Fatal("the template in use was deleted")
	}
	// Ensure recreates a template deleted while forgotten.
	if _, err := p.Ensure(ctx, launchtemplate.Input{ImageID: "ami-2"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.LaunchTemplate(idle); !ok {
		t.Fatal("the template was not recreated")
	}
}

func TestDeleteForNodeClass(t *testing.T) {
	fake, _, p := setup(t)
	ctx := context.Background()
	mine, err := p.Ensure(ctx, launchtemplate.Input{NodeClassName: "a", ImageID: "ami-1"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := p.Ensure(ctx, launchtemplate.Input{NodeClassName: "b", ImageID: "ami-1"})
	if err != nil {
		t.Fatal(err)
	}
	nc := &awsv1.EC2NodeClass{}
	nc.Name = "a"
	if err := p.DeleteForNodeClass(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.LaunchTemplate(mine); ok {
		t.Fatal("the node class's template is still there")
	}
	if _, ok := fake.LaunchTemplate(other); !ok {
		t.Fatal("another node class's template was deleted")
	}
}
