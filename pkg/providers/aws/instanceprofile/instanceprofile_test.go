package instanceprofile_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/iam"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instanceprofile"
)

func TestCreateSwapsRolesAndDeleteIsIdempotent(t *testing.T) {
	r := fakeaws.New(fakeaws.Options{}).Start()
	defer r.Close()
	r.AddRole("a")
	r.AddRole("b")
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := instanceprofile.NewProvider(iam.NewFromConfig(r.AWSConfig()), clk, "us-east-1", "demo")
	ctx := context.Background()
	tags := map[string]string{"k": "v"}
	if err := p.Create(ctx, "demo_1", "a", "/karpenter/x/", tags); err != nil {
		t.Fatal(err)
	}
	if err := p.Create(ctx, "demo_1", "a", "/karpenter/x/", tags); err != nil {
		t.Fatalf("creating again is a no-op: %v", err)
	}
	if err := p.Create(ctx, "demo_1", "path/b", "/karpenter/x/", map[string]string{"k": "v", "extra": "1"}); err != nil {
		t.Fatal(err)
	}
	profiles := r.InstanceProfiles()
	if len(profiles) != 1 || len(profiles[0].Roles) != 1 || profiles[0].Roles[0] != "b" || profiles[0].Tags["extra"] != "1" {
		t.Fatalf("profiles = %+v", profiles)
	}
	listed, err := p.List(ctx, "/karpenter/")
	if err != nil || len(listed) != 1 {
		t.Fatalf("List = %v, %v", listed, err)
	}
	if err := p.Delete(ctx, "demo_1"); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, "demo_1"); err != nil {
		t.Fatalf("deleting a profile already gone: %v", err)
	}
	if len(r.InstanceProfiles()) != 0 {
		t.Fatalf("left: %+v", r.InstanceProfiles())
	}
}

func TestAMissingRoleIsRememberedForAMinute(t *testing.T) {
	r := fakeaws.New(fakeaws.Options{}).Start()
	defer r.Close()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := instanceprofile.NewProvider(iam.NewFromConfig(r.AWSConfig()), clk, "us-east-1", "demo")
	ctx := context.Background()
	err := p.Create(ctx, "demo_1", "missing", "/", nil)
	if !instanceprofile.IsRoleNotFound(err) {
		t.Fatalf("err = %v, want a role-not-found error", err)
	}
	calls := r.Faults().Calls("iam", "CreateInstanceProfile")
	if err := p.Create(ctx, "demo_2", "missing", "/", nil); err == nil || r.Faults().Calls("iam", "CreateInstanceProfile") != calls {
		t.Fatalf("within a minute the missing role is not tried again: %v", err)
	}
	clk.Step(instanceprofile.RoleNotFoundTTL)
	r.AddRole("missing")
	if err := p.Create(ctx, "demo_2", "missing", "/", nil); err != nil {
		t.Fatalf("after a minute: %v", err)
	}
}

// Under Karpenter's controller policy, a profile is created, retagged when the node class's tags change
// (TagInstanceProfile must carry every ownership tag, not only the new one), and deleted.
func TestProfilesUnderKarpentersPolicy(t *testing.T) {
	r := fakeaws.New(fakeaws.Options{EnforcePolicy: &fakeaws.KarpenterPolicy{ClusterName: "demo"}}).Start()
	defer r.Close()
	r.AddRole("KarpenterNodeRole-demo")
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := instanceprofile.NewProvider(iam.NewFromConfig(r.AWSConfig()), clk, "us-east-1", "demo")
	ctx := context.Background()
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "uid-1"}}
	if err := p.Create(ctx, "demo_1", "KarpenterNodeRole-demo", p.Path(nc), p.Tags(nc)); err != nil {
		t.Fatal(err)
	}
	nc.Spec.Tags = map[string]string{"team": "a"}
	if err := p.Create(ctx, "demo_1", "KarpenterNodeRole-demo", p.Path(nc), p.Tags(nc)); err != nil {
		t.Fatalf("retagging: %v", err)
	}
	if profiles := r.InstanceProfiles(); len(profiles) != 1 || profiles[0].Tags["team"] != "a" {
		t.Fatalf("profiles = %+v", profiles)
	}
	if err := p.Delete(ctx, "demo_1"); err != nil {
		t.Fatal(err)
	}
}
