package fakeaws

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// startPolicy runs a fake enforcing Karpenter's controller policy for cluster "demo" in us-east-1.
func startPolicy(t *testing.T) *Running {
	t.Helper()
	r := New(Options{EnforcePolicy: &KarpenterPolicy{ClusterName: "demo"}}).Start()
	t.Cleanup(r.Close)
	return r
}

// owned are the tags Karpenter puts on what it creates for node pool "default" of cluster "demo".
func owned(extra ...string) map[string]string {
	out := map[string]string{"kubernetes.io/cluster/demo": "owned", "eks:eks-cluster-name": "demo", "karpenter.sh/nodepool": "default",
		"karpenter.k8s.aws/ec2nodeclass": "default"}
	for i := 0; i+1 < len(extra); i += 2 {
		out[extra[i]] = extra[i+1]
	}
	return out
}

func without(tags map[string]string, key string) map[string]string {
	out := map[string]string{}
	for k, v := range tags {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func tagList(tags map[string]string) []ec2types.Tag {
	var out []ec2types.Tag
	for _, k := range sortedKeys(tags) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

// policyTemplate creates a launch template tagged with tags whose data tags the network interface (and the
// spot request) with dataTags.
func policyTemplate(c *ec2.Client, name string, tags, dataTags map[string]string) error {
	var data []ec2types.LaunchTemplateTagSpecificationRequest
	if dataTags != nil {
		data = []ec2types.LaunchTemplateTagSpecificationRequest{
			{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: tagList(dataTags)},
			{ResourceType: ec2types.ResourceTypeSpotInstancesRequest, Tags: tagList(dataTags)},
		}
	}
	_, err := c.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1"), TagSpecifications: data},
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tagList(tags)}},
	})
	return err
}

// policyFleet launches one m5.large from the template, tagging the given resource types with tags.
func policyFleet(c *ec2.Client, template, capacityType string, tags map[string]string, kinds ...ec2types.ResourceType) (*ec2.CreateFleetOutput, error) {
	var specs []ec2types.TagSpecification
	for _, k := range kinds {
		specs = append(specs, ec2types.TagSpecification{ResourceType: k, Tags: tagList(tags)})
	}
	return c.CreateFleet(context.Background(), &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(template), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", SubnetId: aws.String("subnet-a"), AvailabilityZone: aws.String("us-east-1a")}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType)},
		TagSpecifications:           specs,
	})
}

var fleetKinds = []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet}

func TestPolicyAllowsTheRegionalReadsOnly(t *testing.T) {
	r := startPolicy(t)
	ctx := context.Background()
	c := ec2.NewFromConfig(r.AWSConfig())
	if _, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil {
		t.Fatalf("DescribeSubnets: %v", err)
	}
	_, err := c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	wantCode(t, "ec2", err, "UnauthorizedOperation")
	cfg := r.AWSConfig()
	cfg.Region = "eu-west-1"
	_, err = ec2.NewFromConfig(cfg).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	wantCode(t, "ec2", err, "UnauthorizedOperation")
	if got := r.PolicyDenials(); len(got) != 2 || !strings.HasPrefix(got[0], "ec2:DescribeAvailabilityZones") {
		t.Fatalf("denials = %q", got)
	}
}

func TestPolicyCreateLaunchTemplateNeedsTheOwnershipAndNodePoolTags(t *testing.T) {
	c := ec2.NewFromConfig(startPolicy(t).AWSConfig())
	if err := policyTemplate(c, "ok", owned(), owned()); err != nil {
		t.Fatalf("fully tagged: %v", err)
	}
	for _, key := range []string{"karpenter.sh/nodepool", "eks:eks-cluster-name", "kubernetes.io/cluster/demo"} {
		wantCode(t, "ec2", policyTemplate(c, "no-"+key, without(owned(), key), owned()), "UnauthorizedOperation")
	}
	wantCode(t, "ec2", policyTemplate(c, "other", owned("kubernetes.io/cluster/demo", "shared"), owned()), "UnauthorizedOperation")
}

func TestPolicyCreateFleetNeedsTaggedTemplatesAndTagsOnEverythingItCreates(t *testing.T) {
	r := startPolicy(t)
	c := ec2.NewFromConfig(r.AWSConfig())
	if err := policyTemplate(c, "full", owned(), owned()); err != nil {
		t.Fatal(err)
	}
	out, err := policyFleet(c, "full", "on-demand", owned(), fleetKinds...)
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("fleet from a tagged template with its resources tagged: %+v, %v", out, err)
	}
	if _, err := policyFleet(c, "full", "spot", owned(), fleetKinds...); err != nil {
		t.Fatalf("spot: the template tags the spot request: %v", err)
	}
	// Any created resource without the tags: the fleet itself, the volumes.
	_, err = policyFleet(c, "full", "on-demand", owned(), ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume)
	wantCode(t, "ec2", err, "UnauthorizedOperation")
	_, err = policyFleet(c, "full", "on-demand", owned(), ec2types.ResourceTypeInstance, ec2types.ResourceTypeFleet)
	wantCode(t, "ec2", err, "UnauthorizedOperation")
	// A template that doesn't tag the network interface (the fleet's tag specifications can't).
	if err := policyTemplate(c, "bare", owned(), nil); err != nil {
		t.Fatal(err)
	}
	_, err = policyFleet(c, "bare", "on-demand", owned(), append(fleetKinds, ec2types.ResourceTypeNetworkInterface)...)
	wantCode(t, "ec2", err, "UnauthorizedOperation")
	// A template without the node pool tag (made before the policy applied).
	r.withState(func(st *state) {
		lt := st.launchTemplates.find("full", "")
		delete(lt.tags, "karpenter.sh/nodepool")
	})
	_, err = policyFleet(c, "full", "on-demand", owned(), fleetKinds...)
	wantCode(t, "ec2", err, "UnauthorizedOperation")
}

func TestPolicyCreateTagsAfterLaunchOnlyTheNodeClaimNameAndEKSTags(t *testing.T) {
	r := startPolicy(t)
	ctx := context.Background()
	c := ec2.NewFromConfig(r.AWSConfig())
	mine := r.RunInstance(Instance{InstanceType: "m5.large", Zone: "us-east-1a", Tags: owned()})
	foreign := r.RunInstance(Instance{InstanceType: "m5.large", Zone: "us-east-1a", Tags: map[string]string{"team": "a"}})
	tag := func(id string, tags map[string]string) error {
		_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: tagList(tags)})
		return err
	}
	if err := tag(mine.ID, map[string]string{"karpenter.sh/nodeclaim": "default-abcde", "Name": "x", "eks:eks-cluster-name": "demo"}); err != nil {
		t.Fatalf("tagging the nodeclaim: %v", err)
	}
	wantCode(t, "ec2", tag(mine.ID, map[string]string{"team": "a"}), "UnauthorizedOperation")
	wantCode(t, "ec2", tag(mine.ID, map[string]string{"eks:eks-cluster-name": "other"}), "UnauthorizedOperation")
	wantCode(t, "ec2", tag(foreign.ID, map[string]string{"karpenter.sh/nodeclaim": "x"}), "UnauthorizedOperation")
	if err := policyTemplate(c, "lt", owned(), owned()); err != nil {
		t.Fatal(err)
	}
	lt, _ := c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"lt"}})
	wantCode(t, "ec2", tag(aws.ToString(lt.LaunchTemplates[0].LaunchTemplateId), map[string]string{"Name": "x"}), "UnauthorizedOperation")
}

func TestPolicyTerminateAndDeleteOnlyWhatTheClusterOwns(t *testing.T) {
	r := startPolicy(t)
	ctx := context.Background()
	c := ec2.NewFromConfig(r.AWSConfig())
	mine := r.RunInstance(Instance{InstanceType: "m5.large", Zone: "us-east-1a", Tags: owned()})
	foreign := r.RunInstance(Instance{InstanceType: "m5.large", Zone: "us-east-1a", Tags: without(owned(), "karpenter.sh/nodepool")})
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{mine.ID}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{foreign.ID}})
	wantCode(t, "ec2", err, "UnauthorizedOperation")

	if err := policyTemplate(c, "lt", owned(), owned()); err != nil {
		t.Fatal(err)
	}
	if err := policyTemplate(c, "lt2", owned(), owned()); err != nil {
		t.Fatal(err)
	}
	r.withState(func(st *state) { delete(st.launchTemplates.find("lt2", "").tags, "kubernetes.io/cluster/demo") })
	if _, err := c.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("lt")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("lt2")})
	wantCode(t, "ec2", err, "UnauthorizedOperation")
}

func TestPolicyInstanceProfilesNeedTheClusterRegionAndNodeClassTags(t *testing.T) {
	r := startPolicy(t)
	r.AddRole("KarpenterNodeRole-demo")
	ctx := context.Background()
	c := iam.NewFromConfig(r.AWSConfig())
	profileTags := func(tags map[string]string) []iamtypes.Tag {
		var out []iamtypes.Tag
		for _, k := range sortedKeys(tags) {
			out = append(out, iamtypes.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
		}
		return out
	}
	full := without(owned("topology.kubernetes.io/region", "us-east-1"), "karpenter.sh/nodepool")
	create := func(name string, tags map[string]string) error {
		_, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name), Tags: profileTags(tags)})
		return err
	}
	if err := create("demo_1", full); err != nil {
		t.Fatalf("create: %v", err)
	}
	wantCode(t, "iam", create("demo_2", without(full, "topology.kubernetes.io/region")), "AccessDenied")
	wantCode(t, "iam", create("demo_3", without(full, "karpenter.k8s.aws/ec2nodeclass")), "AccessDenied")

	_, err := c.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String("demo_1"), Tags: profileTags(map[string]string{"team": "a"})})
	wantCode(t, "iam", err, "AccessDenied")
	if _, err := c.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String("demo_1"), Tags: profileTags(owned("topology.kubernetes.io/region", "us-east-1", "team", "a"))}); err != nil {
		t.Fatalf("tag with every tag: %v", err)
	}
	if _, err := c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("demo_1"), RoleName: aws.String("KarpenterNodeRole-demo")}); err != nil {
		t.Fatalf("add role: %v", err)
	}
	if _, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("demo_1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{}); err != nil {
		t.Fatal(err)
	}
	// A profile someone else made (in another region): nothing but reading it.
	r.withState(func(st *state) {
		st.iam.profiles["theirs"] = &InstanceProfile{Name: "theirs", Path: "/", Roles: []string{"KarpenterNodeRole-demo"},
			Tags: owned("topology.kubernetes.io/region", "us-west-2")}
	})
	_, err = c.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String("theirs"), RoleName: aws.String("KarpenterNodeRole-demo")})
	wantCode(t, "iam", err, "AccessDenied")
	_, err = c.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("theirs")})
	wantCode(t, "iam", err, "AccessDenied")
	if _, err := c.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String("demo_1"), RoleName: aws.String("KarpenterNodeRole-demo")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("demo_1")}); err != nil {
		t.Fatal(err)
	}
}

func TestPolicySSMPricingAndEKS(t *testing.T) {
	r := startPolicy(t)
	ctx := context.Background()
	r.SetParameter("/aws/service/test/image_id", "ami-1")
	r.SetParameter("/team/image_id", "ami-2")
	r.SetCluster(Cluster{Name: "demo", Endpoint: "https://10.0.0.1"})
	r.SetCluster(Cluster{Name: "other", Endpoint: "https://10.0.0.2"})
	params := ssm.NewFromConfig(r.AWSConfig())
	if _, err := params.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/test/image_id")}); err != nil {
		t.Fatalf("public parameter: %v", err)
	}
	_, err := params.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/team/image_id")})
	wantCode(t, "ssm", err, "AccessDeniedException")
	_, err = params.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"/aws/service/test/image_id"}})
	wantCode(t, "ssm", err, "AccessDeniedException")

	prices := pricing.NewFromConfig(r.AWSConfig())
	if _, err := prices.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2")}); err != nil {
		t.Fatalf("GetProducts: %v", err)
	}

	clusters := eks.NewFromConfig(r.AWSConfig())
	if _, err := clusters.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("demo")}); err != nil {
		t.Fatalf("own cluster: %v", err)
	}
	_, err = clusters.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("other")})
	wantCode(t, "eks", err, "AccessDeniedException")
}

// AllowInterruptionQueueActions: receive and delete on the queue named after the cluster, nothing else.
func TestPolicyInterruptionQueue(t *testing.T) {
	r := startPolicy(t)
	ctx := context.Background()
	own, other := r.CreateQueue("demo"), r.CreateQueue("other")
	queues := sqs.NewFromConfig(r.AWSConfig())
	got, err := queues.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("demo")})
	if err != nil || aws.ToString(got.QueueUrl) != own {
		t.Fatalf("GetQueueUrl(demo) = %v, %v", got, err)
	}
	if _, err := queues.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(own)}); err != nil {
		t.Fatalf("ReceiveMessage on the cluster's queue: %v", err)
	}
	_, err = queues.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("other")})
	wantCode(t, "sqs", err, "AccessDeniedException")
	_, err = queues.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(other)})
	wantCode(t, "sqs", err, "AccessDeniedException")
	_, err = queues.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(own), MessageBody: aws.String("{}")})
	wantCode(t, "sqs", err, "AccessDeniedException")
}
