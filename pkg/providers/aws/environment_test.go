package aws_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/discovery"

	"github.com/lathe-autoscaler/lathe/pkg/providers/aws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
)

// The provider finds the fake through AWS_ENDPOINT_URL and static credentials in the environment (the SDK's
// default chain), and the cluster endpoint through EKS DescribeCluster.
func TestNewFromEnvironmentUsesTheDefaultChainAndDiscoversTheCluster(t *testing.T) {
	fake := fakeaws.New(fakeaws.Options{EnforcePolicy: &fakeaws.KarpenterPolicy{ClusterName: clusterName}}).Start()
	t.Cleanup(fake.Close)
	fake.SetCluster(fakeaws.Cluster{Name: clusterName, Endpoint: "https://10.0.0.1:443", CertificateAuthority: "Q0E=", ServiceIPv4CIDR: "10.100.0.0/16"})
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": fake.URL, "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIAFAKE", "AWS_SECRET_ACCESS_KEY": "secret",
		"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
	p, controllers, err := aws.NewFromEnvironment(context.Background(), aws.EnvironmentDeps{Client: env.Client, Discovery: discoveryOf(t), Settings: aws.Settings{ClusterName: clusterName}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "aws" || len(controllers) != 6 || fake.Faults().Calls("eks", "DescribeCluster") != 1 || fake.Faults().Calls("ec2", "DescribeSubnets") == 0 {
		t.Fatalf("provider built without asking the fake: DescribeCluster %d, DescribeSubnets %d",
			fake.Faults().Calls("eks", "DescribeCluster"), fake.Faults().Calls("ec2", "DescribeSubnets"))
	}
	_, _, err = aws.NewFromEnvironment(context.Background(), aws.EnvironmentDeps{Client: env.Client, Discovery: discoveryOf(t), Settings: aws.Settings{ClusterName: "unknown"}})
	if err == nil || !strings.Contains(err.Error(), "CLUSTER_ENDPOINT") {
		t.Fatalf("error = %v, want one that says to set CLUSTER_ENDPOINT", err)
	}
}

func discoveryOf(t *testing.T) discovery.ServerVersionInterface {
	d, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
