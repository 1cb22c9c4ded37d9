package instanceprofile_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/iam"
	clocktesting "k8s.io/utils/clock/testing"

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
