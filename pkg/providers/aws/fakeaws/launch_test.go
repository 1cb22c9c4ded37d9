package fakeaws

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func createTemplate(t *testing.T, c *ec2.Client, name string) {
	t.Helper()
	_, err := c.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            aws.String("ami-1"),
			UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte("doc"))),
			SecurityGroupIds:   []string{"sg-1", "sg-2"},
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("profile")},
			MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
				HttpTokens: ec2types.LaunchTemplateHttpTokensStateRequired, HttpPutResponseHopLimit: aws.Int32(1),
				HttpEndpoint: ec2types.LaunchTemplateInstanceMetadataEndpointStateEnabled,
			},
			BlockDeviceMappings: []ec2types.LaunchTemplateBlockDeviceMappingRequest{{DeviceName: aws.String("/dev/xvda"),
				Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(20), VolumeType: ec2types.VolumeTypeGp3, Encrypted: aws.Bool(true)}}},
			NetworkInterfaces: []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{AssociatePublicIpAddress: aws.Bool(false), DeviceIndex: aws.Int32(0)}},
			Monitoring:        &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(true)},
			TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String("a"), Value: aws.String("b")}}}},
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{{Key: aws.String("karpenter.k8s.aws/cluster"), Value: aws.String("demo")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLaunchTemplatesThroughTheSDK(t *testing.T) {
	r := start(t)
	c := ec2.NewFromConfig(r.AWSConfig())
	ctx := context.Background()
	createTemplate(t, c, "lt-a")
	data, ok := r.LaunchTemplate("lt-a")
	if !ok || data.ImageID != "ami-1" || data.HTTPTokens != "required" || data.HTTPPutResponseHopLimit != 1 || data.HTTPEndpoint != "enabled" ||
		len(data.SecurityGroupIDs) != 2 || data.InstanceProfile != "profile" || data.AssociatePublicIPAddress != "false" || !data.Monitoring ||
		len(data.BlockDeviceMappings) != 1 || data.BlockDeviceMappings[0].VolumeSizeGiB != 20 || data.TagSpecifications["instance"]["a"] != "b" {
		t.Fatalf("template data = %+v", data)
	}
	_, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("lt-a"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{}})
	wantCode(t, "ec2", err, "InvalidLaunchTemplateName.AlreadyExistsException")

	out, err := c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.k8s.aws/cluster"), Values: []string{"demo"}}}})
	if err != nil || len(out.LaunchTemplates) != 1 || aws.ToString(out.LaunchTemplates[0].LaunchTemplateName) != "lt-a" {
		t.Fatalf("describe by tag = %+v, %v", out, err)
	}
	_, err = c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"missing"}})
	wantCode(t, "ec2", err, "InvalidLaunchTemplateName.NotFoundException")

	if _, err := c.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("lt-a")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("lt-a")})
	wantCode(t, "ec2", err, "InvalidLaunchTemplateName.NotFoundException")
}

func fleetInput(token, capacityType string, types ...string) *ec2.CreateFleetInput {
	var overrides []ec2types.FleetLaunchTemplateOverridesRequest
	for _, it := range types {
		overrides = append(overrides, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(it), SubnetId: aws.String("subnet-a"), AvailabilityZone: aws.String("us-east-1a")})
	}
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("lt-a"), Version: aws.String("$Latest")},
			Overrides:                   overrides,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType)},
		SpotOptions:                 &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
		OnDemandOptions:             &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance,
			Tags: []ec2types.Tag{{Key: aws.String("kubernetes.io/cluster/demo"), Value: aws.String("owned")}}}},
	}
	if token != "" {
		in.ClientToken = aws.String(token)
	}
	return in
}

func TestCreateFleetLaunchesTheCheapestOfferingWithCapacity(t *testing.T) {
	r := start(t)
	c := ec2.NewFromConfig(r.AWSConfig())
	ctx := context.Background()
	createTemplate(t, c, "lt-a")
	// m5.large is cheaper than m5.xlarge; with no capacity for it, the fleet launches m5.xlarge and says why.
	r.SetInsufficientCapacity("m5.large", "us-east-1a", "spot", true)
	out, err := c.CreateFleet(ctx, fleetInput("", "spot", "m5.xlarge", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || out.Instances[0].InstanceType != "m5.xlarge" || out.Instances[0].Lifecycle != ec2types.InstanceLifecycleSpot || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("instances = %+v", out.Instances)
	}
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientInstanceCapacity" ||
		out.Errors[0].LaunchTemplateAndOverrides.Overrides.InstanceType != "m5.large" ||
		aws.ToString(out.Errors[0].LaunchTemplateAndOverrides.Overrides.AvailabilityZone) != "us-east-1a" {
		t.Fatalf("errors = %+v", out.Errors)
	}
	r.SetInsufficientCapacity("m5.xlarge", "us-east-1a", "spot", true)
	out, err = c.CreateFleet(ctx, fleetInput("", "spot", "m5.xlarge", "m5.large"))
	if err != nil || len(out.Instances) != 0 || len(out.Errors) != 2 {
		t.Fatalf("with no capacity anywhere: %+v, %v", out, err)
	}
	out, err = c.CreateFleet(ctx, fleetInput("", "on-demand", "m5.xlarge", "m5.large"))
	if err != nil || len(out.Instances) != 1 || out.Instances[0].InstanceType != "m5.large" || out.Instances[0].Lifecycle != "" && out.Instances[0].Lifecycle != ec2types.InstanceLifecycle("on-demand") {
		t.Fatalf("on-demand: %+v, %v", out, err)
	}
}

func TestCreateFleetIsIdempotentPerClientToken(t *testing.T) {
	r := start(t)
	c := ec2.NewFromConfig(r.AWSConfig())
	createTemplate(t, c, "lt-a")
	first, err := c.CreateFleet(context.Background(), fleetInput("token-1", "on-demand", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.CreateFleet(context.Background(), fleetInput("token-1", "on-demand", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Instances()) != 1 || again.Instances[0].InstanceIds[0] != first.Instances[0].InstanceIds[0] {
		t.Fatalf("a repeated client token launched again: %d instances", len(r.Instances()))
	}
}

func TestInstancesThroughTheSDK(t *testing.T) {
	r := start(t)
	c := ec2.NewFromConfig(r.AWSConfig())
	ctx := context.Background()
	createTemplate(t, c, "lt-a")
	fleet, err := c.CreateFleet(ctx, fleetInput("", "spot", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	id := fleet.Instances[0].InstanceIds[0]
	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("default-abc")}}}); err != nil {
		t.Fatal(err)
	}
	out, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:karpenter.sh/nodeclaim"), Values: []string{"default-abc"}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
	}})
	if err != nil || len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		t.Fatalf("describe = %+v, %v", out, err)
	}
	in := out.Reservations[0].Instances[0]
	tags := map[string]string{}
	for _, tag := range in.Tags {
		tags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	if aws.ToString(in.InstanceId) != id || in.InstanceType != "m5.large" || aws.ToString(in.Placement.AvailabilityZone) != "us-east-1a" ||
		in.InstanceLifecycle != ec2types.InstanceLifecycleTypeSpot || in.State.Name != ec2types.InstanceStateNameRunning ||
		aws.ToString(in.ImageId) != "ami-1" || aws.ToString(in.SubnetId) != "subnet-a" || len(in.SecurityGroups) != 2 ||
		in.IamInstanceProfile == nil || aws.ToString(in.PrivateDnsName) == "" || in.LaunchTime == nil ||
		tags["karpenter.sh/nodeclaim"] != "default-abc" || tags["kubernetes.io/cluster/demo"] != "owned" {
		t.Fatalf("instance = %+v", in)
	}
	for range 2 { // terminating twice is not an error
		term, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
		if err != nil || term.TerminatingInstances[0].CurrentState.Name != ec2types.InstanceStateNameTerminated {
			t.Fatalf("terminate = %+v, %v", term, err)
		}
	}
	out, err = c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}}}})
	if err != nil || len(out.Reservations) != 0 {
		t.Fatalf("running after terminate = %+v, %v", out, err)
	}
	_, err = c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-00000000000000099"}})
	wantCode(t, "ec2", err, "InvalidInstanceID.NotFound")
	_, err = c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"i-00000000000000099"}})
	wantCode(t, "ec2", err, "InvalidInstanceID.NotFound")
}
