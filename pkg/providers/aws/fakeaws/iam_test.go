package fakeaws

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
)

func TestInstanceProfileLifecycleThroughTheSDK(t *testing.T) {
	r := start(t)
	r.AddRole("KarpenterNodeRole-demo")
	client := iam.NewFromConfig(r.AWSConfig())
	ctx := context.Background()
	name := aws.String("demo_123")

	_, err := client.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: name})
	wantCode(t, "iam", err, "NoSuchEntity")
	created, err := client.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
		InstanceProfileName: name, Path: aws.String("/karpenter/us-east-1/demo/uid/"),
		Tags: []iamtypes.Tag{{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("default")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(created.InstanceProfile.Arn) != "arn:aws:iam::000000000000:instance-profile/karpenter/us-east-1/demo/uid/demo_123" {
		t.Fatalf("arn = %s", aws.ToString(created.InstanceProfile.Arn))
	}
	_, err = client.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: name})
	wantCode(t, "iam", err, "EntityAlreadyExists")
	if _, err := client.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: name, Tags: []iamtypes.Tag{{Key: aws.String("team"), Value: aws.String("a")}}}); err != nil {
		t.Fatal(err)
	}
	_, err = client.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("missing")})
	wantCode(t, "iam", err, "NoSuchEntity")
	if _, err := client.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("KarpenterNodeRole-demo")}); err != nil {
		t.Fatal(err)
	}
	got, err := client.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: name})
	if err != nil || len(got.InstanceProfile.Roles) != 1 || aws.ToString(got.InstanceProfile.Roles[0].RoleName) != "KarpenterNodeRole-demo" || len(got.InstanceProfile.Tags) != 2 {
		t.Fatalf("profile = %+v, %v", got, err)
	}
	list, err := client.ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{PathPrefix: aws.String("/karpenter/us-east-1/demo/")})
	if err != nil || len(list.InstanceProfiles) != 1 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	_, err = client.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name})
	wantCode(t, "iam", err, "DeleteConflict")
	if _, err := client.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("KarpenterNodeRole-demo")}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name}); err != nil {
		t.Fatal(err)
	}
	if len(r.InstanceProfiles()) != 0 {
		t.Fatalf("profiles left: %+v", r.InstanceProfiles())
	}
}
