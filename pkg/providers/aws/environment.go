package aws

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Settings are the process settings the provider reads (CLUSTER_NAME, CLUSTER_ENDPOINT, CLUSTER_CA_BUNDLE,
// VM_MEMORY_OVERHEAD_PERCENT).
type Settings struct {
	ClusterName, ClusterEndpoint, ClusterCABundle string
	VMMemoryOverheadPercent                       float64
}

// NewFromEnvironment builds the provider as it runs on EKS: the SDK configuration (region, credentials,
// endpoint) from the default chain only (environment, shared config, web identity / IRSA, Pod Identity,
// instance metadata), so credentials never pass through Lathe's settings or logs; the region's zones from
// DescribeAvailabilityZones; and whatever of the cluster endpoint, CA bundle and service range the
// settings leave out from EKS DescribeCluster.
func NewFromEnvironment(ctx context.Context, kube client.Reader, clk clock.Clock, s Settings) (*CloudProvider, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithEC2IMDSRegion())
	if err != nil {
		return nil, fmt.Errorf("loading the AWS SDK configuration, %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("no AWS region: set AWS_REGION (or run where instance metadata answers)")
	}
	cluster, err := discoverCluster(ctx, eks.NewFromConfig(cfg), s)
	if err != nil {
		return nil, err
	}
	ec2api := ec2.NewFromConfig(cfg)
	zones, err := regionZones(ctx, ec2api)
	if err != nil {
		return nil, err
	}
	log.FromContext(ctx).Info("using AWS", "region", cfg.Region, "zones", zones, "clusterEndpoint", cluster.endpoint)
	return New(Deps{
		Client: kube, EC2: ec2api, Clock: clk, ClusterName: s.ClusterName, ClusterEndpoint: cluster.endpoint,
		ClusterCABundle: cluster.caBundle, ClusterDNS: cluster.dns, ClusterCIDR: cluster.cidr, Region: cfg.Region, Zones: zones,
		UserData: RenderUserData, VMMemoryOverheadPercent: s.VMMemoryOverheadPercent,
	})
}

type clusterInfo struct{ endpoint, caBundle, cidr, dns string }

// discoverCluster fills in from EKS what the settings leave out. Without CLUSTER_ENDPOINT, DescribeCluster
// must answer; otherwise its failure only leaves the service range unknown.
func discoverCluster(ctx context.Context, api *eks.Client, s Settings) (clusterInfo, error) {
	out := clusterInfo{endpoint: s.ClusterEndpoint, caBundle: s.ClusterCABundle}
	resp, err := api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: sdkaws.String(s.ClusterName)})
	if err != nil {
		if out.endpoint == "" {
			return out, fmt.Errorf("discovering the endpoint of cluster %q through EKS DescribeCluster (or set CLUSTER_ENDPOINT), %w", s.ClusterName, err)
		}
		return out, nil
	}
	c := resp.Cluster
	if out.endpoint == "" {
		out.endpoint = sdkaws.ToString(c.Endpoint)
	}
	if out.caBundle == "" && c.CertificateAuthority != nil {
		out.caBundle = sdkaws.ToString(c.CertificateAuthority.Data)
	}
	if c.KubernetesNetworkConfig != nil {
		out.cidr = sdkaws.ToString(c.KubernetesNetworkConfig.ServiceIpv4Cidr)
		out.dns = clusterDNS(out.cidr)
	}
	return out, nil
}

// clusterDNS is the kube-dns service address EKS uses: the tenth address of the service range.
func clusterDNS(cidr string) string {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return ""
	}
	addr := prefix.Masked().Addr()
	for range 10 {
		addr = addr.Next()
	}
	return addr.String()
}

func regionZones(ctx context.Context, api *ec2.Client) ([]string, error) {
	out, err := api.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		return nil, fmt.Errorf("describing availability zones, %w", err)
	}
	var zones []string
	for _, z := range out.AvailabilityZones {
		zones = append(zones, sdkaws.ToString(z.ZoneName))
	}
	slices.Sort(zones)
	return zones, nil
}
