package fakeaws

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func sdkFilter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

func TestDescribeSubnetsThroughTheSDK(t *testing.T) {
	r := start(t)
	net := r.SeedClusterNetwork("demo")
	r.AddSubnet(Subnet{VPCID: net.VPCID, Zone: "us-east-1a", AvailableIPs: 10, Tags: map[string]string{"team": "other"}})
	client := ec2.NewFromConfig(r.AWSConfig())
	ctx := context.Background()

	out, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{sdkFilter("tag:karpenter.sh/discovery", "demo")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Subnets) != 3 {
		t.Fatalf("subnets tagged demo = %d, want 3", len(out.Subnets))
	}
	zones := map[string]string{}
	for _, s := range out.Subnets {
		zones[aws.ToString(s.AvailabilityZone)] = aws.ToString(s.AvailabilityZoneId)
		if aws.ToInt32(s.AvailableIpAddressCount) != 4091 || aws.ToString(s.VpcId) != net.VPCID || len(s.Tags) != 3 {
			t.Fatalf("subnet = %+v", s)
		}
	}
	if zones["us-east-1a"] != "use1-az1" || zones["us-east-1c"] != "use1-az3" {
		t.Fatalf("zones = %v", zones)
	}

	for _, c := range []struct {
		name    string
		filters []ec2types.Filter
		want    int
	}{
		{"tag-key", []ec2types.Filter{sdkFilter("tag-key", "team")}, 1},
		{"subnet-id", []ec2types.Filter{sdkFilter("subnet-id", net.SubnetIDs[1])}, 1},
		{"zone and vpc", []ec2types.Filter{sdkFilter("availability-zone", "us-east-1a"), sdkFilter("vpc-id", net.VPCID)}, 2},
		{"tag wildcard", []ec2types.Filter{sdkFilter("tag:karpenter.sh/discovery", "de*")}, 3},
		{"nothing", []ec2types.Filter{sdkFilter("tag:karpenter.sh/discovery", "prod")}, 0},
	} {
		out, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: c.filters})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Subnets) != c.want {
			t.Errorf("%s: %d subnets, want %d", c.name, len(out.Subnets), c.want)
		}
	}

	// The paginator walks every page.
	var n int
	p := ec2.NewDescribeSubnetsPaginator(client, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(5)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Subnets)
	}
	if n != 4 {
		t.Fatalf("paginated subnets = %d, want 4", n)
	}
	if n := r.AdjustSubnetIPs(net.SubnetIDs[0], -91); n != 4000 {
		t.Fatalf("free IPs after taking 91 = %d", n)
	}
	byID, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{net.SubnetIDs[0]}})
	if err != nil || len(byID.Subnets) != 1 || aws.ToInt32(byID.Subnets[0].AvailableIpAddressCount) != 4000 {
		t.Fatalf("by id: %+v, %v", byID, err)
	}
	_, err = client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0000000000000dead"}})
	wantCode(t, "ec2", err, "InvalidSubnetID.NotFound")
}

func TestDescribeSecurityGroupsThroughTheSDK(t *testing.T) {
	r := start(t)
	net := r.SeedClusterNetwork("demo")
	other := r.AddSecurityGroup(SecurityGroup{Name: "web", VPCID: net.VPCID, Tags: map[string]string{"tier": "web"}})
	client := ec2.NewFromConfig(r.AWSConfig())
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		filters []ec2types.Filter
		want    []string
	}{
		{"tag", []ec2types.Filter{sdkFilter("tag:karpenter.sh/discovery", "demo")}, []string{net.SecurityGroupID}},
		{"group-id", []ec2types.Filter{sdkFilter("group-id", other.ID)}, []string{other.ID}},
		{"group-name", []ec2types.Filter{sdkFilter("group-name", "web")}, []string{other.ID}},
		{"vpc-id", []ec2types.Filter{sdkFilter("vpc-id", net.VPCID)}, []string{net.SecurityGroupID, other.ID}},
	} {
		out, err := client.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: c.filters})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, sg := range out.SecurityGroups {
			got = append(got, aws.ToString(sg.GroupId))
		}
		sort.Strings(got)
		if len(got) != len(c.want) || got[0] != c.want[0] {
			t.Errorf("%s: groups %v, want %v", c.name, got, c.want)
		}
	}
	out, err := client.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{net.SecurityGroupID}})
	if err != nil || len(out.SecurityGroups) != 1 || aws.ToString(out.SecurityGroups[0].GroupName) != "eks-cluster-sg-demo" {
		t.Fatalf("by id: %+v, %v", out, err)
	}
}

func TestDescribeCapacityReservationsThroughTheSDK(t *testing.T) {
	r := start(t)
	end := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	active := r.AddCapacityReservation(CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1a", Total: 4, Available: 3, EndDate: &end, Tags: map[string]string{"team": "a"}})
	r.AddCapacityReservation(CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1b", Total: 1, State: "expired", Tags: map[string]string{"team": "a"}})
	client := ec2.NewFromConfig(r.AWSConfig())
	out, err := client.DescribeCapacityReservations(context.Background(), &ec2.DescribeCapacityReservationsInput{
		Filters: []ec2types.Filter{sdkFilter("state", "active"), sdkFilter("tag:team", "a"), sdkFilter("instance-match-criteria", "open")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.CapacityReservations) != 1 {
		t.Fatalf("reservations = %d, want 1 (the expired one filtered out)", len(out.CapacityReservations))
	}
	cr := out.CapacityReservations[0]
	if aws.ToString(cr.CapacityReservationId) != active.ID || aws.ToString(cr.OwnerId) != Account || aws.ToString(cr.AvailabilityZoneId) != "use1-az1" ||
		aws.ToInt32(cr.AvailableInstanceCount) != 3 || cr.InstanceMatchCriteria != ec2types.InstanceMatchCriteriaOpen ||
		cr.ReservationType != ec2types.CapacityReservationTypeDefault || !aws.ToTime(cr.EndDate).Equal(end) || cr.State != ec2types.CapacityReservationStateActive {
		t.Fatalf("reservation = %+v", cr)
	}
}

// TestEndedCapacityReservationLeavesItsInstancesOnDemand: once a default reservation expires, its running
// instances are described without it (and keep running), the reservation as expired with no slots; an
// instance already terminated is left as it was, and a capacity block can't be ended this way.
func TestEndedCapacityReservationLeavesItsInstancesOnDemand(t *testing.T) {
	r := start(t)
	cr := r.AddCapacityReservation(CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1a", Total: 3, Available: 1})
	running := r.RunInstance(Instance{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand", CapacityReservationID: cr.ID})
	gone := r.RunInstance(Instance{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand", CapacityReservationID: cr.ID, State: StateTerminated})

	moved, err := r.EndCapacityReservation(cr.ID, "expired")
	if err != nil || len(moved) != 1 || moved[0] != running.ID {
		t.Fatalf("EndCapacityReservation = %v, %v; want [%s]", moved, err, running.ID)
	}
	client := ec2.NewFromConfig(r.AWSConfig())
	out, err := client.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{running.ID, gone.ID}})
	if err != nil {
		t.Fatal(err)
	}
	described := map[string]ec2types.Instance{}
	for _, res := range out.Reservations {
		for _, in := range res.Instances {
			described[aws.ToString(in.InstanceId)] = in
		}
	}
	if in := described[running.ID]; in.CapacityReservationId != nil || in.State == nil || in.State.Name != ec2types.InstanceStateNameRunning {
		t.Errorf("instance of the ended reservation: reservation %v, state %+v; want none, running", aws.ToString(in.CapacityReservationId), in.State)
	}
	if in := described[gone.ID]; aws.ToString(in.CapacityReservationId) != cr.ID {
		t.Errorf("terminated instance: reservation %q, want %s as before", aws.ToString(in.CapacityReservationId), cr.ID)
	}
	if got, _ := r.CapacityReservation(cr.ID); got.State != "expired" || got.Available != 0 {
		t.Errorf("reservation state %s with %d slots, want expired with 0", got.State, got.Available)
	}

	block := r.AddCapacityReservation(CapacityReservation{InstanceType: "p5.48xlarge", Zone: "us-east-1a", Total: 1, ReservationType: "capacity-block"})
	if _, err := r.EndCapacityReservation(block.ID, "expired"); err == nil {
		t.Error("ended a capacity block")
	}
	if _, err := r.EndCapacityReservation(cr.ID, "active"); err == nil {
		t.Error("ended a reservation as active")
	}
}
