package instance

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// Label names and values of the provider's metrics (Karpenter's AWS provider's).
const (
	batcherLabel       = "batcher"
	zoneIDLabel        = "zone_id"
	createFleetBatcher = "create_fleet"
)

// Metrics are the instance provider's collectors: the CreateFleet batcher's window and size
// (karpenter_cloudprovider_batcher_*) and the per-offering launch and the termination failures
// (karpenter_cloudprovider_instance_*_failures_total).
type Metrics struct {
	batchTime, batchSize                *prometheus.HistogramVec
	launchFailures, terminationFailures *prometheus.CounterVec
}

// batchSizeBuckets are the AWS provider's bucket bounds for the number of requests in a batch.
func batchSizeBuckets() []float64 {
	return []float64{1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 175, 200,
		225, 250, 275, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000}
}

// NewMetrics creates the provider's collectors on reg (or returns the equal ones registered there before).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	const subsystem = "cloudprovider"
	return &Metrics{
		batchTime: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem + "_batcher", Name: "batch_time_seconds",
			Help:    "Seconds a batcher kept a batch open, from its first request until it was sent, by batcher.",
			Buckets: metrics.DurationBuckets(),
		}, batcherLabel),
		batchSize: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem + "_batcher", Name: "batch_size",
			Help:    "How many requests a batcher sent together in one API call, by batcher.",
			Buckets: batchSizeBuckets(),
		}, batcherLabel),
		launchFailures: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "instance_launch_failures_total",
			Help: "Offerings CreateFleet reported an error for (one CreateFleet can fail several), by zone, zone ID, capacity type and the classified failure reason.",
		}, metrics.ZoneLabel, zoneIDLabel, metrics.CapacityTypeLabel, metrics.ReasonLabel),
		terminationFailures: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "instance_termination_failures_total",
			Help: "TerminateInstances calls that failed, by the instance's zone and zone ID.",
		}, metrics.ZoneLabel, zoneIDLabel),
	}
}

// launchFailureReasons classify a CreateFleet error ("<code>: <message>") for the reason label of
// karpenter_cloudprovider_instance_launch_failures_total, with the AWS provider's reason names. The first
// rule whose every fragment occurs in the error wins; capacity and quota errors come last, and an error
// no rule matches is LaunchFailed.
var launchFailureReasons = []struct {
	fragments []string
	reason    string
}{
	{[]string{"AuthFailure.ServiceLinkedRoleCreationNotPermitted"}, "SpotSLRCreationFailed"},
	{[]string{"UnauthorizedOperation", "Not authorized for images"}, "AMIAuthorizationFailure"},
	{[]string{"AccessDenied", "Not authorized for images"}, "AMIAuthorizationFailure"},
	{[]string{"AuthFailure", "Not authorized for images"}, "AMIAuthorizationFailure"},
	{[]string{"UnauthorizedOperation"}, "Unauthorized"},
	{[]string{"AccessDenied"}, "Unauthorized"},
	{[]string{"AuthFailure"}, "Unauthorized"},
	{[]string{"InvalidParameter", "belong to different networks"}, "SecurityGroupSubnetVPCMismatch"},
	{[]string{"iamInstanceProfile.name is invalid"}, "InstanceProfileNameInvalid"},
	{[]string{"InvalidLaunchTemplateId.NotFound"}, "LaunchTemplateNotFound"},
	{[]string{"User data is limited to"}, "UserDataSizeLimitExceeded"},
	{[]string{"InvalidAMIID.Malformed"}, "InvalidAMIID"},
	{[]string{"InvalidAMIID.NotFound"}, "AMINotFound"},
	{[]string{"RequestLimitExceeded"}, "RequestLimitExceeded"},
	{[]string{"InternalError"}, "InternalError"},
	{[]string{"not eligible for Free Tier"}, "FreeTierIneligible"},
	{[]string{"MaxFleetCountExceeded"}, "FleetQuotaExceeded"},
	{[]string{"PendingVerification"}, "AccountPendingVerification"},
	{[]string{"MaxSpotInstanceCountExceeded"}, "SpotQuotaExceeded"},
	{[]string{"VcpuLimitExceeded"}, "VCPULimitExceeded"},
	{[]string{"InsufficientFreeAddressesInSubnet"}, "InsufficientFreeAddressesInSubnet"},
}

// launchFailureReason is the reason label for a CreateFleet error.
func launchFailureReason(code, message string) string {
	text := code + ": " + message
	for _, r := range launchFailureReasons {
		matched := true
		for _, f := range r.fragments {
			matched = matched && strings.Contains(text, f)
		}
		if matched {
			return r.reason
		}
	}
	return "LaunchFailed"
}
