package aws_test

import (
	"context"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws"
)

type subnetList []ec2types.Subnet

func (l subnetList) List(context.Context, []awsv1.SubnetSelectorTerm) ([]ec2types.Subnet, error) {
	return l, nil
}

func TestLaunchesIntoTheSubnetWithTheMostFreeAddresses(t *testing.T) {
	subnet := func(id, zone string, free int32) ec2types.Subnet {
		return ec2types.Subnet{SubnetId: sdkaws.String(id), AvailabilityZone: sdkaws.String(zone), AvailableIpAddressCount: sdkaws.Int32(free)}
	}
	h := newHarness(t, func(d *aws.Deps) {
		d.Subnets = subnetList{subnet("subnet-a", "us-east-1a", 10), subnet("subnet-a2", "us-east-1a", 4000), subnet("subnet-x", "us-east-1a", 9000)}
	})
	nc := nodeClass(t, "subnets", func(nc *awsv1.EC2NodeClass) {
		// subnet-x is listed but not resolved for the node class: never used.
		nc.Status.Subnets = []awsv1.Subnet{{ID: "subnet-a", Zone: "us-east-1a"}, {ID: "subnet-a2", Zone: "us-east-1a"}}
	})
	if _, err := h.provider.Create(context.Background(), nodeClaim(nc.Name, "on-demand", "m5.large")); err != nil {
		t.Fatal(err)
	}
	if live := h.live(); len(live) != 1 || live[0].SubnetID != "subnet-a2" {
		t.Fatalf("launched into %+v, want subnet-a2 (most free addresses)", live)
	}
}
