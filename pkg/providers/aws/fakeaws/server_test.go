package fakeaws

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
)

func start(t *testing.T) *Running {
	t.Helper()
	r := New(Options{}).Start()
	t.Cleanup(r.Close)
	return r
}

func TestDescribeAvailabilityZonesThroughTheSDK(t *testing.T) {
	r := start(t)
	out, err := ec2.NewFromConfig(r.AWSConfig()).DescribeAvailabilityZones(context.Background(), &ec2.DescribeAvailabilityZonesInput{
		Filters: []ec2types.Filter{{Name: aws.String("zone-name"), Values: []string{"us-east-1a", "us-east-1c"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, z := range out.AvailabilityZones {
		got[aws.ToString(z.ZoneName)] = aws.ToString(z.ZoneId)
	}
	want := map[string]string{"us-east-1a": "use1-az1", "us-east-1c": "use1-az3"}
	if len(got) != len(want) || got["us-east-1a"] != want["us-east-1a"] || got["us-east-1c"] != want["us-east-1c"] {
		t.Fatalf("zones = %v, want %v", got, want)
	}
}

func TestThrottledCallsAreRetriedBySDK(t *testing.T) {
	r := start(t)
	r.Faults().Throttle("ec2", "DescribeAvailabilityZones", 2)
	if _, err := ec2.NewFromConfig(r.AWSConfig()).DescribeAvailabilityZones(context.Background(), &ec2.DescribeAvailabilityZonesInput{}); err != nil {
		t.Fatalf("the SDK should retry past two throttled answers: %v", err)
	}
	if n := r.Faults().Calls("ec2", "DescribeAvailabilityZones"); n != 3 {
		t.Fatalf("calls = %d, want 3 (two throttled, one answered)", n)
	}
}

func TestErrorsReachTheSDKWithTheirCodes(t *testing.T) {
	r := start(t)
	ctx := context.Background()
	r.Faults().Fail("ec2", "DescribeAvailabilityZones", "UnauthorizedOperation", "You are not authorized to perform this operation.", http.StatusForbidden, 1)
	_, err := ec2.NewFromConfig(r.AWSConfig()).DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	wantCode(t, "ec2", err, "UnauthorizedOperation")

	r.Faults().Fail("ssm", "GetParameter", "ParameterNotFound", "no such parameter", http.StatusBadRequest, 1)
	_, err = ssm.NewFromConfig(r.AWSConfig()).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/x")})
	wantCode(t, "ssm", err, "ParameterNotFound")

	r.Faults().Fail("iam", "GetInstanceProfile", "NoSuchEntity", "no such profile", http.StatusNotFound, 1)
	_, err = iam.NewFromConfig(r.AWSConfig()).GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("x")})
	wantCode(t, "iam", err, "NoSuchEntity")

	r.Faults().Fail("eks", "DescribeCluster", "ResourceNotFoundException", "no such cluster", http.StatusNotFound, 1)
	_, err = eks.NewFromConfig(r.AWSConfig()).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("x")})
	wantCode(t, "eks", err, "ResourceNotFoundException")
}

func wantCode(t *testing.T, service string, err error, code string) {
	t.Helper()
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != code {
		t.Fatalf("%s: error = %v, want API error code %s", service, err, code)
	}
}

func TestWildcardMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"al2023-*", "al2023-ami-2023.5", true},
		{"*-x86_64", "al2023-ami-x86_64", true},
		{"m5.?large", "m5.xlarge", true},
		{"m5.?large", "m5.large", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
	} {
		if got := wildcardMatch(c.pattern, c.s); got != c.want {
			t.Errorf("wildcardMatch(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

func TestRegionShortName(t *testing.T) {
	for region, want := range map[string]string{"us-east-1": "use1", "eu-central-1": "euc1", "ap-southeast-2": "apse2", "us-west-2": "usw2"} {
		if got := regionShortName(region); got != want {
			t.Errorf("regionShortName(%s) = %s, want %s", region, got, want)
		}
	}
}

func TestDescribeCluster(t *testing.T) {
	r := start(t)
	r.SetCluster(Cluster{Name: "demo", Endpoint: "https://127.0.0.1:6443", CertificateAuthority: "Q0E=", ServiceIPv4CIDR: "10.100.0.0/16", Version: "1.35"})
	out, err := eks.NewFromConfig(r.AWSConfig()).DescribeCluster(context.Background(), &eks.DescribeClusterInput{Name: aws.String("demo")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.Cluster.Endpoint) != "https://127.0.0.1:6443" || aws.ToString(out.Cluster.CertificateAuthority.Data) != "Q0E=" ||
		aws.ToString(out.Cluster.KubernetesNetworkConfig.ServiceIpv4Cidr) != "10.100.0.0/16" {
		t.Fatalf("cluster = %+v", out.Cluster)
	}
	_, err = eks.NewFromConfig(r.AWSConfig()).DescribeCluster(context.Background(), &eks.DescribeClusterInput{Name: aws.String("other")})
	wantCode(t, "eks", err, "ResourceNotFoundException")
}
