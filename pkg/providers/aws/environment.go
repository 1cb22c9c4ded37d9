package aws

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/ami"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instancetype"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/nodeclass"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/pricing"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/reservationdemotion"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/reservationexpiry"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/sdkhttp"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/unavailable"
)

// Settings are the process settings the provider reads (CLUSTER_NAME, CLUSTER_ENDPOINT, CLUSTER_CA_BUNDLE,
// VM_MEMORY_OVERHEAD_PERCENT, the ReservedCapacity feature gate).
type Settings struct {
	ClusterName, ClusterEndpoint, ClusterCABundle string
	VMMemoryOverheadPercent                       float64
	ReservedCapacity                              bool
	// IsolatedVPC (ISOLATED_VPC): no Pricing API or spot price calls; the embedded prices only.
	IsolatedVPC bool
	// ReservedENIs (RESERVED_ENIS): network interfaces kept out of the max-pods calculation.
	ReservedENIs int
	// InterruptionQueue (INTERRUPTION_QUEUE): the SQS queue of interruption events; empty for none.
	InterruptionQueue string
}

// EnvironmentDeps are what NewFromEnvironment builds from.
type EnvironmentDeps struct {
	// Client reads and writes EC2NodeClasses and NodeClaims (the manager's, cached). Required.
	Client client.Client
	// Discovery answers the cluster's Kubernetes version (for AMI aliases). Required.
	Discovery discovery.ServerVersionInterface
	Clock     clock.Clock
	Recorder  events.Recorder
	Settings  Settings
	// Registerer takes the provider's metrics (Deps.Registerer).
	Registerer prometheus.Registerer
}

// Controller is a controller that comes with the provider.
type Controller interface {
	Register(ctx context.Context, mgr manager.Manager) error
}

// NewFromEnvironment builds the provider as it runs on EKS, with the controllers that come with it (the
// EC2NodeClass status and hash controllers, the launch template sweeper, the capacity block expiration
// controller): the SDK configuration (region, credentials, endpoint) from the default chain only
// (environment, shared config, web identity / IRSA, Pod Identity, instance metadata), so credentials never
// pass through Lathe's settings or logs; the region's zones from its subnets (regionZones); and whatever of
// the cluster endpoint, CA bundle and service range the settings leave out from EKS DescribeCluster.
func NewFromEnvironment(ctx context.Context, deps EnvironmentDeps) (*CloudProvider, []Controller, error) {
	s := deps.Settings
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithEC2IMDSRegion())
	if err != nil {
		return nil, nil, fmt.Errorf("loading the AWS SDK configuration, %w", err)
	}
	cfg = sdkhttp.Config(cfg)
	if cfg.Region == "" {
		return nil, nil, errors.New("no AWS region: set AWS_REGION (or run where instance metadata answers)")
	}
	cluster, err := discoverCluster(ctx, eks.NewFromConfig(cfg), s)
	if err != nil {
		return nil, nil, err
	}
	ec2api := ec2.NewFromConfig(cfg)
	zones, err := regionZones(ctx, ec2api)
	if err != nil {
		return nil, nil, err
	}
	log.FromContext(ctx).Info("using AWS", "region", cfg.Region, "zones", zones, "clusterEndpoint", cluster.endpoint)
	providers := nodeclass.NewProviders(cfg, deps.Clock, s.ClusterName, ami.ServerVersion(deps.Discovery))
	offerings := unavailable.New(deps.Clock)
	prices := pricing.New(pricing.Options{EC2: ec2api, Pricing: pricing.NewAPI(cfg), Region: cfg.Region, IsolatedVPC: s.IsolatedVPC, Clock: deps.Clock})
	types := instancetype.New(instancetype.Options{EC2: ec2api, Prices: prices, Region: cfg.Region, Unavailable: offerings,
		VMMemoryOverheadPercent: s.VMMemoryOverheadPercent, ReservedENIs: s.ReservedENIs, Clock: deps.Clock})
	var reservations Reservations
	if s.ReservedCapacity {
		reservations = providers.CapacityReservations
	}
	cloud, err := New(Deps{
		Reservations: reservations, Registerer: deps.Registerer,
		Client: deps.Client, EC2: ec2api, Clock: deps.Clock, ClusterName: s.ClusterName, ClusterEndpoint: cluster.endpoint,
		ClusterCABundle: cluster.caBundle, ClusterDNS: cluster.dns, ClusterCIDR: cluster.cidr, Region: cfg.Region, Zones: zones,
		UserData: RenderUserData, InstanceTypes: types, Unavailable: offerings, Subnets: providers.Subnets,
		InterruptionQueue: s.InterruptionQueue, SQS: sqs.NewFromConfig(cfg),
	})
	if err != nil {
		return nil, nil, err
	}
	var caBundle *string
	if s.ClusterCABundle != "" {
		caBundle = &s.ClusterCABundle
	}
	controllers := []Controller{
		nodeclass.NewController(nodeclass.Deps{Client: deps.Client, Clock: deps.Clock, Recorder: deps.Recorder, Providers: providers,
			ReservedCapacity: s.ReservedCapacity, Cleanups: []func(context.Context, *awsv1.EC2NodeClass) error{cloud.templates.DeleteForNodeClass}}),
		nodeclass.NewHashController(deps.Client, caBundle),
		NewTemplateSweeper(cloud, deps.Clock),
		reservationexpiry.New(deps.Client, providers.CapacityReservations, deps.Clock),
		reservationdemotion.New(deps.Client, cloud),
		runnable{prices},
	}
	return cloud, controllers, nil
}

// runnable registers a manager.Runnable (the price refresher) as a controller.
type runnable struct{ manager.Runnable }

func (r runnable) Register(_ context.Context, mgr manager.Manager) error { return mgr.Add(r.Runnable) }

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
