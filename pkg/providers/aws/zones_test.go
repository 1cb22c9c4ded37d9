package aws

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
)

// The region's zones are those of its subnets, found with a call Karpenter's controller policy allows.
func TestRegionZonesAreTheSubnetsZonesUnderKarpentersPolicy(t *testing.T) {
	fake := fakeaws.New(fakeaws.Options{Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"},
		EnforcePolicy: &fakeaws.KarpenterPolicy{ClusterName: "demo"}}).Start()
	t.Cleanup(fake.Close)
	api := ec2.NewFromConfig(fake.AWSConfig())
	zones, err := regionZones(context.Background(), api)
	if err != nil || len(zones) != 0 {
		t.Fatalf("no subnets: zones = %v, %v; want none (New's default applies)", zones, err)
	}
	for _, z := range []string{"us-east-1d", "us-east-1b", "us-east-1d"} {
		fake.AddSubnet(fakeaws.Subnet{Zone: z, CIDR: "10.0.0.0/24"})
	}
	zones, err = regionZones(context.Background(), api)
	if err != nil || !slices.Equal(zones, []string{"us-east-1b", "us-east-1d"}) {
		t.Fatalf("zones = %v, %v; want us-east-1b and us-east-1d", zones, err)
	}
}
