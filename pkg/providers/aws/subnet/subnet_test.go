package subnet_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/subnet"
)

func TestTermsAreORedAndTheirTagsANDed(t *testing.T) {
	r := fakeaws.New(fakeaws.Options{}).Start()
	defer r.Close()
	both := r.AddSubnet(fakeaws.Subnet{Zone: "us-east-1a", AvailableIPs: 10, Tags: map[string]string{"a": "1", "b": "2"}})
	onlyA := r.AddSubnet(fakeaws.Subnet{Zone: "us-east-1b", AvailableIPs: 50, Tags: map[string]string{"a": "1"}})
	byID := r.AddSubnet(fakeaws.Subnet{Zone: "us-east-1c", AvailableIPs: 30})
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := subnet.NewProvider(ec2.NewFromConfig(r.AWSConfig()), clk)
	ctx := context.Background()

	ids := func(terms ...awsv1.SubnetSelectorTerm) []string {
		t.Helper()
		subnets, err := p.List(ctx, terms)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range subnets {
			out = append(out, aws.ToString(s.SubnetId))
		}
		return out
	}
	if got := ids(awsv1.SubnetSelectorTerm{Tags: map[string]string{"a": "1", "b": "2"}}); len(got) != 1 || got[0] != both.ID {
		t.Fatalf("tags within a term are ANDed: %v", got)
	}
	got := ids(awsv1.SubnetSelectorTerm{Tags: map[string]string{"a": "*"}}, awsv1.SubnetSelectorTerm{ID: byID.ID})
	if want := []string{onlyA.ID, byID.ID, both.ID}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("terms are ORed, most free IPs first: %v, want %v", got, want)
	}

	// Answers are cached for a minute per set of terms.
	calls := r.Faults().Calls("ec2", "DescribeSubnets")
	ids(awsv1.SubnetSelectorTerm{Tags: map[string]string{"a": "*"}}, awsv1.SubnetSelectorTerm{ID: byID.ID})
	if n := r.Faults().Calls("ec2", "DescribeSubnets"); n != calls {
		t.Fatalf("a cached resolution called DescribeSubnets %d more times", n-calls)
	}
	clk.Step(subnet.CacheTTL)
	ids(awsv1.SubnetSelectorTerm{Tags: map[string]string{"a": "*"}}, awsv1.SubnetSelectorTerm{ID: byID.ID})
	if n := r.Faults().Calls("ec2", "DescribeSubnets"); n != calls+2 {
		t.Fatalf("after the TTL: %d calls, want %d", n, calls+2)
	}
	if d := subnet.Describe([]awsv1.SubnetSelectorTerm{{Tags: map[string]string{"b": "2", "a": "1"}}, {ID: "subnet-1"}}); d != "tags a=1,b=2 or id subnet-1" {
		t.Fatalf("Describe = %q", d)
	}
}
