package launchtemplate_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/launchtemplate"
)

func setup(t *testing.T) (*fakeaws.Running, *clocktesting.FakeClock, *launchtemplate.Provider) {
	fake := fakeaws.New(fakeaws.Options{}).Start()
	t.Cleanup(fake.Close)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return fake, clk, launchtemplate.New(ec2.NewFromConfig(fake.AWSConfig()), "demo", clk, nil)
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
	restarted := launchtemplate.New(ec2.NewFromConfig(fake.AWSConfig()), "demo", nil, nil)
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
	leftBehind(t, fake, "karpenter.k8s.aws/1", "demo", "a")
	leftBehind(t, fake, "karpenter.k8s.aws/2", "other", "a")
	nc := &awsv1.EC2NodeClass{}
	nc.Name = "a"
	if err := p.DeleteForNodeClass(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.LaunchTemplate(mine); ok {
		t.Fatal("the node class's template is still there")
	}
	if _, ok := fake.LaunchTemplate("karpenter.k8s.aws/1"); ok {
		t.Fatal("the node class's template Karpenter left is still there")
	}
	if _, ok := fake.LaunchTemplate("karpenter.k8s.aws/2"); !ok {
		t.Fatal("another cluster's template of a node class with the same name was deleted")
	}
	if _, ok := fake.LaunchTemplate(other); !ok {
		t.Fatal("another node class's template was deleted")
	}
}

// leftBehind creates a template as Karpenter v1.14 tags its own (the instance tags: no Lathe cluster tag)
// for the cluster, node pool "default" and the node class.
func leftBehind(t *testing.T, fake *fakeaws.Running, name, cluster, nodeClass string) {
	t.Helper()
	tags := []ec2types.Tag{
		{Key: aws.String("kubernetes.io/cluster/" + cluster), Value: aws.String("owned")},
		{Key: aws.String("eks:eks-cluster-name"), Value: aws.String(cluster)},
		{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")},
		{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String(nodeClass)},
	}
	_, err := ec2.NewFromConfig(fake.AWSConfig()).CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTemplatesLeftBehindAreDeletedOnceUnusedAfterHydration: templates Karpenter left for the cluster are
// registered when the provider hydrates (on election) and deleted once unused for UnusedAfter, as
// Karpenter's cache evicts and deletes them; another cluster's are never touched.
func TestTemplatesLeftBehindAreDeletedOnceUnusedAfterHydration(t *testing.T) {
	fake, clk, p := setup(t)
	ctx := context.Background()
	leftBehind(t, fake, "karpenter.k8s.aws/1", "demo", "default")
	leftBehind(t, fake, "karpenter.k8s.aws/2", "other", "default")
	if err := p.Hydrate(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Step(launchtemplate.UnusedAfter - time.Second)
	if err := p.DeleteUnused(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.LaunchTemplate("karpenter.k8s.aws/1"); !ok {
		t.Fatal("a template was deleted before it was unused for UnusedAfter")
	}
	clk.Step(time.Second)
	if err := p.DeleteUnused(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.LaunchTemplate("karpenter.k8s.aws/1"); ok {
		t.Fatal("the cluster's template Karpenter left is still there")
	}
	if _, ok := fake.LaunchTemplate("karpenter.k8s.aws/2"); !ok {
		t.Fatal("another cluster's template was deleted")
	}
}

// heldDeletes holds each DeleteLaunchTemplate until release is closed, and says when one started.
type heldDeletes struct {
	launchtemplate.EC2API
	started, release chan struct{}
}

func (h *heldDeletes) DeleteLaunchTemplate(ctx context.Context, in *ec2.DeleteLaunchTemplateInput, opts ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error) {
	close(h.started)
	<-h.release
	return h.EC2API.DeleteLaunchTemplate(ctx, in, opts...)
}

// TestATemplateBeingDeletedIsNotHandedOut: an Ensure that comes while the sweep is deleting the same
// template waits for the deletion and creates the template again, rather than return one about to
// disappear.
func TestATemplateBeingDeletedIsNotHandedOut(t *testing.T) {
	fake, clk, _ := setup(t)
	held := &heldDeletes{EC2API: ec2.NewFromConfig(fake.AWSConfig()), started: make(chan struct{}), release: make(chan struct{})}
	p := launchtemplate.New(held, "demo", clk, nil)
	ctx := context.Background()
	in := launchtemplate.Input{ImageID: "ami-1"}
	name, err := p.Ensure(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(launchtemplate.UnusedAfter)
	swept := make(chan error)
	go func() { swept <- p.DeleteUnused(ctx) }()
	<-held.started
	ensured := make(chan error)
	go func() {
		_, err := p.Ensure(ctx, in)
		ensured <- err
	}()
	select {
	case err := <-ensured:
		close(held.release)
		<-swept
		t.Fatalf("Ensure returned (%v) while its template was being deleted", err)
	case <-time.After(200 * time.Millisecond): // Ensure is waiting, as it should
	}
	close(held.release)
	if err := <-swept; err != nil {
		t.Fatal(err)
	}
	if err := <-ensured; err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.LaunchTemplate(name); !ok {
		t.Fatal("the template Ensure returned is gone")
	}
}
