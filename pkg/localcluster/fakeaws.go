package localcluster

import (
	"encoding/base64"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lathe-autoscaler/lathe/pkg/apis/scheme"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
)

// FakeAWSOptions configure StartFakeAWS.
type FakeAWSOptions struct {
	// ClusterName is the EKS cluster the fake describes, and what its network is tagged for.
	ClusterName string
	// KubernetesVersion picks the EKS-optimized images the fake publishes, major.minor. Default 1.37 (the
	// local cluster's).
	KubernetesVersion string
	// Log receives why an instance didn't join. Default discards.
	Log logr.Logger
}

// FakeAWS is a fake AWS served on a loopback port whose instances boot into the local cluster as
// kwok-managed Nodes.
type FakeAWS struct {
	*fakeaws.Running
	// LatheEnv points a Lathe process at the fake: CLOUD_PROVIDER=aws, AWS_ENDPOINT_URL, the region,
	// static credentials (the SDK's default chain reads them) and INTERRUPTION_QUEUE, the queue named after
	// the cluster.
	LatheEnv []string
	// AMD64AMIID is the newest AL2023 x86_64 image the fake publishes.
	AMD64AMIID string
}

// StartFakeAWS starts the fake with the tutorial's seeds: a VPC with a subnet per zone and a security group
// tagged karpenter.sh/discovery=<cluster>, the node role KarpenterNodeRole-<cluster>, the EKS-optimized
// images and SSM parameters, the EKS cluster (the local API server's endpoint and CA) and the interruption
// queue <cluster>. It answers as AWS does for a controller role holding only Karpenter v1.14's getting-started
// controller policy for the cluster (fakeaws.KarpenterPolicy). Close it with Close.
func StartFakeAWS(c *Cluster, opts FakeAWSOptions) (*FakeAWS, error) {
	if opts.KubernetesVersion == "" {
		opts.KubernetesVersion = "1.37"
	}
	cfg := c.RESTConfig()
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("reading the cluster CA, %w", err)
		}
	}
	caBundle := base64.StdEncoding.EncodeToString(ca)
	// Lathe must run under the controller role a team keeps from Karpenter: the fake enforces its policy.
	server := fakeaws.New(fakeaws.Options{EnforcePolicy: &fakeaws.KarpenterPolicy{ClusterName: opts.ClusterName}})
	server.SeedClusterNetwork(opts.ClusterName)
	server.CreateQueue(opts.ClusterName)
	server.SeedEKSOptimizedImages(opts.KubernetesVersion)
	server.SetCluster(fakeaws.Cluster{Name: opts.ClusterName, Endpoint: cfg.Host, CertificateAuthority: caBundle,
		ServiceIPv4CIDR: serviceCIDR, Version: opts.KubernetesVersion})
	sch, err := scheme.New()
	if err != nil {
		return nil, err
	}
	kube, err := client.New(cfg, client.Options{Scheme: sch})
	if err != nil {
		return nil, fmt.Errorf("creating client, %w", err)
	}
	if err := server.BootNodesInto(kube, fakeaws.BootOptions{ClusterName: opts.ClusterName, ClusterEndpoint: cfg.Host,
		ClusterCABundle: caBundle, Parse: fakeaws.ParseUserData, Log: opts.Log}); err != nil {
		return nil, err
	}
	ami, _ := server.Parameter("/aws/service/eks/optimized-ami/" + opts.KubernetesVersion + "/amazon-linux-2023/x86_64/standard/recommended/image_id")
	running, err := server.Listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &FakeAWS{Running: running, AMD64AMIID: ami, LatheEnv: []string{
		"CLOUD_PROVIDER=aws", "AWS_ENDPOINT_URL=" + running.URL, "AWS_REGION=" + server.Region(), "INTERRUPTION_QUEUE=" + opts.ClusterName,
		"AWS_ACCESS_KEY_ID=AKIAFAKEAWSLATHE0000", "AWS_SECRET_ACCESS_KEY=fake-secret",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	}}, nil
}
