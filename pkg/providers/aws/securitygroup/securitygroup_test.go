package securitygroup_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/securitygroup"
)

func TestSelectsByTagsIDAndName(t *testing.T) {
	r := fakeaws.New(fakeaws.Options{}).Start()
	defer r.Close()
	tagged := r.AddSecurityGroup(fakeaws.SecurityGroup{Name: "nodes", Tags: map[string]string{"karpenter.sh/discovery": "demo"}})
	named := r.AddSecurityGroup(fakeaws.SecurityGroup{Name: "web"})
	byID := r.AddSecurityGroup(fakeaws.SecurityGroup{Name: "db"})
	r.AddSecurityGroup(fakeaws.SecurityGroup{Name: "other", Tags: map[string]string{"karpenter.sh/discovery": "prod"}})
	p := securitygroup.NewProvider(ec2.NewFromConfig(r.AWSConfig()), clocktesting.NewFakeClock(time.Now()))
	terms := []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}, {Name: "web"}, {ID: byID.ID}}
	groups, err := p.List(context.Background(), terms)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, g := range groups {
		got[aws.ToString(g.GroupId)] = true
	}
	if len(got) != 3 || !got[tagged.ID] || !got[named.ID] || !got[byID.ID] {
		t.Fatalf("groups = %v", got)
	}
	if d := securitygroup.Describe(terms); d != "tags karpenter.sh/discovery=demo or name web or id "+byID.ID {
		t.Fatalf("Describe = %q", d)
	}
}
