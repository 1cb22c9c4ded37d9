package fakeaws

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

func TestEKSOptimizedParametersPointAtImages(t *testing.T) {
	r := start(t)
	ctx := context.Background()
	params := ssm.NewFromConfig(r.AWSConfig())
	images := ec2.NewFromConfig(r.AWSConfig())
	for path, wantName := range map[string]string{
		"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id":                                       "amazon-eks-node-al2023-x86_64-standard-1.37-v20251120",
		"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/nvidia/recommended/image_id":                                          "amazon-eks-node-al2023-arm64-nvidia-1.37-v20251120",
		"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/neuron/amazon-eks-node-al2023-x86_64-neuron-1.37-v20240807/image_id": "amazon-eks-node-al2023-x86_64-neuron-1.37-v20240807",
		"/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/image_id":                                                      "amazon-eks-gpu-node-1.32-v20250301",
		"/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/amazon-eks-arm64-node-1.32-v20240807/image_id":                           "amazon-eks-arm64-node-1.32-v20240807",
		"/aws/service/bottlerocket/aws-k8s-1.37/arm64/latest/image_id":                                                                     "bottlerocket-aws-k8s-1.37-arm64-v1.50.0",
		"/aws/service/bottlerocket/aws-k8s-1.37-nvidia/x86_64/1.20.4/image_id":                                                             "bottlerocket-aws-k8s-1.37-nvidia-x86_64-v1.20.4",
		"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.37/image_id":                                     "Windows_Server-2022-English-Core-EKS_Optimized-1.37-2025.11.12",
		"/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.37/image_id":                                     "Windows_Server-2025-English-Core-EKS_Optimized-1.37-2025.11.12",
	} {
		out, err := params.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(path)})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		id := aws.ToString(out.Parameter.Value)
		img, err := images.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{id}})
		if err != nil || len(img.Images) != 1 || aws.ToString(img.Images[0].Name) != wantName {
			t.Fatalf("%s → %s: %+v, %v; want %s", path, id, img, err, wantName)
		}
	}
	_, err := params.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.37/amazon-linux-2/recommended/image_id")})
	wantCode(t, "ssm", err, "ParameterNotFound")

	many, err := params.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"/aws/service/bottlerocket/aws-k8s-1.36/x86_64/latest/image_id", "/nope"}})
	if err != nil || len(many.Parameters) != 1 || len(many.InvalidParameters) != 1 {
		t.Fatalf("GetParameters = %+v, %v", many, err)
	}
}

func TestDescribeImagesFiltersAndFields(t *testing.T) {
	r := start(t)
	ctx := context.Background()
	client := ec2.NewFromConfig(r.AWSConfig())
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	mine := r.AddImage(Image{Name: "team-ami-1", Architecture: "arm64", CreationDate: time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC), Tags: map[string]string{"team": "a"}})
	gone := r.AddImage(Image{Name: "team-ami-0", CreationDate: old, DeprecationTime: &old, Tags: map[string]string{"team": "a"}})

	out, err := client.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{sdkFilter("tag:team", "a")}})
	if err != nil || len(out.Images) != 1 || aws.ToString(out.Images[0].ImageId) != mine.ID {
		t.Fatalf("deprecated images are left out by default: %+v, %v", out, err)
	}
	img := out.Images[0]
	if img.Architecture != ec2types.ArchitectureValuesArm64 || aws.ToString(img.CreationDate) != "2025-05-06T07:08:09.000Z" || aws.ToString(img.OwnerId) != Account ||
		img.State != ec2types.ImageStateAvailable || aws.ToString(img.RootDeviceName) != "/dev/xvda" || len(img.BlockDeviceMappings) != 1 ||
		aws.ToInt32(img.BlockDeviceMappings[0].Ebs.VolumeSize) != 20 || len(img.Tags) != 1 {
		t.Fatalf("image = %+v", img)
	}
	out, err = client.DescribeImages(ctx, &ec2.DescribeImagesInput{IncludeDeprecated: aws.Bool(true), Owners: []string{"self"},
		Filters: []ec2types.Filter{sdkFilter("name", "team-ami-*"), sdkFilter("state", "available")}})
	if err != nil || len(out.Images) != 2 {
		t.Fatalf("with deprecated: %+v, %v", out, err)
	}
	for _, i := range out.Images {
		if aws.ToString(i.ImageId) == gone.ID && aws.ToString(i.DeprecationTime) != "2020-01-01T00:00:00.000Z" {
			t.Fatalf("deprecation time = %q", aws.ToString(i.DeprecationTime))
		}
	}
	out, err = client.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}, Filters: []ec2types.Filter{
		sdkFilter("name", "amazon-eks-node-al2023-*-standard-1.37-*"), sdkFilter("architecture", "arm64"),
	}})
	if err != nil || len(out.Images) != 2 { // v20250301 and v20251120; v20240807 is deprecated by now
		t.Fatalf("amazon arm64 al2023 images: %d, %v", len(out.Images), err)
	}
	out, err = client.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"self"}, Filters: []ec2types.Filter{sdkFilter("image-id", mine.ID, gone.ID)}})
	if err != nil || len(out.Images) != 1 {
		t.Fatalf("image-id filter: %+v, %v", out, err)
	}
	_, err = client.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ami-00000000000000000"}})
	wantCode(t, "ec2", err, "InvalidAMIID.NotFound")
}
