package options

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// setting is one entry of the settings table, and the one place a setting is defined: its environment variable
// (the flag name is derived from it), the default as text, the one-line help, what it accepts and how it is
// stored (value), and doc, the remarks the settings reference (docs/settings.md) adds to the help line.
type setting struct {
	env   string
	def   string
	usage string
	doc   string
	value
}

// value parses and checks one value of a setting and stores it in Options; accepts says in words what set
// takes, for the settings reference.
type value struct {
	set     func(string) error
	accepts string
	isBool  bool
}

// settings returns the table of every setting, bound to o. Parse, Usage and Reference all read it, so the
// flags, the environment variables, the defaults, the help text and the reference can't drift apart.
func settings(o *Options) []setting {
	return []setting{
		{env: "CLUSTER_NAME", usage: "Name of the cluster (required).", value: text(&o.ClusterName),
			doc: "Tags every instance, launch template and instance profile, and scopes discovery."},
		{env: "CLUSTER_ENDPOINT", usage: "API server URL for nodes to join; empty means discover it.", value: endpoint(&o.ClusterEndpoint),
			doc: "With CLOUD_PROVIDER=aws, an unset endpoint (and the service range, always) is asked of EKS DescribeCluster."},
		{env: "CLUSTER_CA_BUNDLE", usage: "Base64 PEM CA bundle of the API server; empty means discover it.", value: text(&o.ClusterCABundle),
			doc: "With CLOUD_PROVIDER=aws, an unset bundle is asked of EKS DescribeCluster."},
		{env: "INTERRUPTION_QUEUE", usage: "SQS queue of interruption events; empty disables interruption handling.", value: text(&o.InterruptionQueue),
			doc: "With CLOUD_PROVIDER=aws, the queue's EventBridge messages (spot interruption warnings, rebalance recommendations, instance state changes, scheduled changes, capacity reservation interruptions) are read and acted on; it needs sqs:GetQueueUrl, sqs:ReceiveMessage and sqs:DeleteMessage. The simulated provider's interruptions are handled without it."},
		{env: "BATCH_MAX_DURATION", def: "10s", usage: "Longest time a provisioning batch stays open.", value: duration(&o.BatchMaxDuration, time.Nanosecond)},
		{env: "BATCH_IDLE_DURATION", def: "1s", usage: "Close a provisioning batch after this long without a new pending pod.", value: duration(&o.BatchIdleDuration, time.Nanosecond)},
		{env: "FEATURE_GATES", def: DefaultFeatureGates().String(), usage: "Comma-separated Gate=bool list; unlisted gates keep their default.", value: gates(&o.FeatureGates),
			doc: "NodeRepair=true runs node repair (`node.health`). SpotToSpotConsolidation=true lets single-node consolidation replace spot with cheaper spot (at least 15 cheaper types). " +
				"StaticCapacity=true keeps static NodePools (`spec.replicas`) at their count (`nodepool.static`) and replaces their drifted nodes. " +
				"**Refused** when it turns on NodeOverlay or CapacityBuffer (not built yet). ReservedCapacity may be true or false: Lathe launches no reserved capacity either way."},
		{env: "PREFERENCE_POLICY", def: PreferencePolicyRespect, usage: "Respect or Ignore preferred scheduling terms.", value: oneOf(&o.PreferencePolicy, PreferencePolicyRespect, PreferencePolicyIgnore)},
		{env: "MIN_VALUES_POLICY", def: MinValuesPolicyStrict, usage: "Strict or BestEffort handling of NodePool minValues.", value: oneOf(&o.MinValuesPolicy, MinValuesPolicyStrict, MinValuesPolicyBestEffort)},
		{env: "IGNORE_DRA_REQUESTS", def: "true", usage: "Ignore pods' dynamic resource allocation requests while scheduling.", value: boolean(&o.IgnoreDRARequests),
			doc: "**Refused** when false: Lathe always ignores DRA resource claims."},
		{env: "VM_MEMORY_OVERHEAD_PERCENT", def: "0.075", usage: "Fraction of instance memory reserved for the hypervisor, in [0, 1).", value: fraction(&o.VMMemoryOverheadPercent),
			doc: "Honoured by both providers: ceil(memory × value) MiB comes off each instance type's memory, as Karpenter's AWS provider does (`lathe simulate` keeps the default)."},
		{env: "RESERVED_ENIS", def: "0", usage: "Network interfaces kept out of the max-pods calculation.", value: integer(&o.ReservedENIs, 0, math.MaxInt32),
			doc: "With CLOUD_PROVIDER=aws, interfaces left out of the ENI-limited max pods. **Refused** when not 0 with the simulated provider, whose max pods always come from the full ENI limit."},
		{env: "ISOLATED_VPC", def: "false", usage: "The VPC has no internet access: skip public pricing and SSM lookups.", value: boolean(&o.IsolatedVPC),
			doc: "Prices then come from the embedded catalog only."},
		{env: "EKS_CONTROL_PLANE", def: "false", usage: "The cluster is EKS: ask the EKS API for missing cluster details.", value: boolean(&o.EKSControlPlane),
			doc: "Accepted and not used yet: with CLOUD_PROVIDER=aws Lathe always asks EKS DescribeCluster for what CLUSTER_ENDPOINT, CLUSTER_CA_BUNDLE and the service range leave open."},
		{env: "DISABLE_DRY_RUN", def: "false", usage: "Skip the EC2 dry-run permission checks at start-up.", value: boolean(&o.DisableDryRun),
			doc: "Accepted and not used yet: Lathe makes no dry-run calls at start-up."},
		{env: "ENABLE_ZONAL_SHIFT", def: "false", usage: "Avoid zones under an active ARC zonal shift.", value: boolean(&o.EnableZonalShift),
			doc: "Accepted and not used yet: Lathe does not read ARC zonal shifts."},
		{env: "AMI_REFRESH_INTERVAL", def: "1m", usage: "How often AMIs are re-discovered (at least 1m).", value: duration(&o.AMIRefreshInterval, time.Minute),
			doc: "Accepted and not used yet: the AWS provider re-resolves AMIs on its own schedule (EC2NodeClass status every 5 minutes, image lookups cached for 1 minute)."},
		{env: "SUBNET_REFRESH_INTERVAL", def: "1m", usage: "How often subnets are re-discovered (at least 1m).", value: duration(&o.SubnetRefreshInterval, time.Minute),
			doc: "Accepted and not used yet: the AWS provider re-resolves subnets on its own schedule (EC2NodeClass status every minute)."},
		{env: "KUBE_CLIENT_QPS", def: "200", usage: "Queries per second allowed to the API server.", value: integer(&o.KubeClientQPS, 1, math.MaxInt32)},
		{env: "KUBE_CLIENT_BURST", def: "300", usage: "Burst of queries allowed to the API server.", value: integer(&o.KubeClientBurst, 1, math.MaxInt32)},
		{env: "METRICS_PORT", def: "8080", usage: "Port of /metrics; 0 disables it.", value: integer(&o.MetricsPort, 0, math.MaxUint16),
			doc: "Must differ from HEALTH_PROBE_PORT."},
		{env: "HEALTH_PROBE_PORT", def: "8081", usage: "Port of /healthz and /readyz; 0 disables it.", value: integer(&o.HealthProbePort, 0, math.MaxUint16),
			doc: "Must differ from METRICS_PORT."},
		{env: "DISABLE_LEADER_ELECTION", def: "false", usage: "Run without a leader election Lease (single replica only).", value: boolean(&o.DisableLeaderElection)},
		{env: "LEADER_ELECTION_NAME", def: "karpenter-leader-election", usage: "Name of the leader election Lease.", value: dnsSubdomain(&o.LeaderElectionName)},
		{env: "LEADER_ELECTION_NAMESPACE", usage: "Namespace of the Lease; empty means SYSTEM_NAMESPACE, else kube-system.", value: dnsLabel(&o.LeaderElectionNamespace)},
		{env: "SYSTEM_NAMESPACE", usage: "Namespace Lathe runs in.", value: dnsLabel(&o.SystemNamespace),
			doc: "Set by the Helm chart."},
		{env: "DISABLE_CONTROLLER_WARMUP", def: "true", usage: "Don't start controller watches before this replica is leader.", value: boolean(&o.DisableControllerWarmup)},
		{env: "DISABLE_CLUSTER_STATE_OBSERVABILITY", def: "false", usage: "Turn off the cluster state metrics.", value: boolean(&o.DisableClusterStateObservability),
			doc: "**Refused** when true: the cluster state metrics can't be turned off yet."},
		{env: "ENABLE_PROFILING", def: "false", usage: "Serve /debug/pprof/ on the metrics port.", value: boolean(&o.EnableProfiling)},
		{env: "MEMORY_LIMIT", def: "-1", usage: "Container memory limit in bytes; when positive GOMEMLIMIT is set to 90% of it.", value: integer(&o.MemoryLimit, math.MinInt64, math.MaxInt64)},
		{env: "CPU_REQUESTS", def: "1000", usage: "Container CPU request in millicores.", value: cpuRequests(&o.CPURequests),
			doc: "Karpenter's chart always sets it from the pod's CPU request (0 when the pod has none); Karpenter scales controller concurrency with it, Lathe accepts it and does not use it."},
		{env: "LOG_LEVEL", def: LogLevelInfo, usage: "debug, info or error.", value: oneOf(&o.LogLevel, LogLevelDebug, LogLevelInfo, LogLevelError)},
		{env: "LOG_OUTPUT_PATHS", def: "stdout", usage: "Comma-separated log sinks: stdout, stderr or file paths.", value: list(&o.LogOutputPaths)},
		{env: "LOG_ERROR_OUTPUT_PATHS", def: "stderr", usage: "Comma-separated sinks for the logger's own internal errors.", value: list(&o.LogErrorOutputPaths)},
		{env: "KARPENTER_SERVICE", usage: "Accepted for compatibility with Karpenter's chart; unused.", value: text(&o.KarpenterService)},
		{env: "CLOUD_PROVIDER", def: CloudProviderSim, usage: "Cloud provider: aws or sim (simulated, no cloud).", value: oneOf(&o.CloudProvider, CloudProviderAWS, CloudProviderSim),
			doc: "Lathe only. `aws` launches EC2 instances through aws-sdk-go-v2; region, credentials and endpoint come only from the SDK's default chain " +
				"(`AWS_REGION` or instance metadata; IRSA, Pod Identity, environment or shared config; `AWS_ENDPOINT_URL`)."},
		{env: "NOMINATED_NODE_NAME", def: NominatedNodeNameAuto, usage: "auto, true or false: tell the kube-scheduler the Node each pod is planned onto (status.nominatedNodeName); auto means on API server v1.35+.", value: oneOf(&o.NominatedNodeName, NominatedNodeNameAuto, "true", "false"),
			doc: "Lathe only. When on, Lathe sets the `status.nominatedNodeName` of each pending pod to the Node it planned the pod onto (KEP-5278: the kube-scheduler tries that node first and keeps the room for the pod), " +
				"and clears it when the plan no longer holds; a nomination the kube-scheduler set (preemption) is never touched. " +
				"`auto` turns it on when the API server is v1.35 or later (`NominatedNodeNameForExpectation` is beta and on by default there). Needs `patch` on `pods/status`."},
		{env: "PLAN_UNTRIED_PODS", def: "true", usage: "Plan pending pods the kube-scheduler has not tried yet (a second after their creation) with those it marked unschedulable.", value: boolean(&o.PlanUntriedPods),
			doc: "Lathe only. Karpenter plans only pods the kube-scheduler marked unschedulable; when many pods arrive at once the kube-scheduler falls behind and the pods it has not reached come to provisioning later, in passes of their own that cost more. " +
				"With this on, a pass also plans pods the kube-scheduler has not tried one second after their creation; a pod that fits existing capacity opens nothing, and the kube-scheduler still decides where every pod goes. Such pods do not start a batch, so when provisioning runs is Karpenter's. " +
				"`false` waits for the kube-scheduler's verdict, as Karpenter does. On by default since pods planned again keep their places (docs/performance.md, eighteenth session); before that it cost more when a burst outlasted BATCH_MAX_DURATION."},
		{env: "SIM_LAUNCH_DELAY", def: "0s", usage: "With CLOUD_PROVIDER=sim: how long a launched instance takes to appear as a Node.", value: duration(&o.SimLaunchDelay, 0),
			doc: "Lathe only."},
	}
}

func text(dst *string) value {
	return value{accepts: "any text", set: func(v string) error {
		*dst = v
		return nil
	}}
}

func boolean(dst *bool) value {
	return value{accepts: "true or false", isBool: true, set: func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("must be true or false")
		}
		*dst = b
		return nil
	}}
}

// integer parses a base-10 integer in [lo, hi] into any integer field.
func integer[T int | int64](dst *T, lo, hi int64) value {
	accepts := fmt.Sprintf("whole number from %d to %d", lo, hi)
	switch {
	case lo == math.MinInt64 && hi == math.MaxInt64:
		accepts = "whole number"
	case hi == math.MaxInt32 || hi == math.MaxInt64:
		accepts = fmt.Sprintf("whole number ≥ %d", lo)
	}
	return value{accepts: accepts, set: func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < lo || n > hi {
			if lo == math.MinInt64 && hi == math.MaxInt64 {
				return errors.New("must be a whole number")
			}
			return fmt.Errorf("must be a whole number from %d to %d", lo, hi)
		}
		*dst = T(n)
		return nil
	}}
}

// cpuRequests reads millicores as Karpenter does: a value of 0 or less (the downward API's answer for a
// container without a CPU request) means the default, 1000.
func cpuRequests(dst *int64) value {
	whole := integer(dst, math.MinInt64, math.MaxInt64)
	return value{accepts: "whole number; 0 or less means 1000", set: func(v string) error {
		if err := whole.set(v); err != nil {
			return err
		}
		if *dst <= 0 {
			*dst = 1000
		}
		return nil
	}}
}

func fraction(dst *float64) value {
	return value{accepts: "number from 0 up to (not including) 1", set: func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || f < 0 || f >= 1 {
			return errors.New("must be a number from 0 up to (not including) 1, e.g. 0.075")
		}
		*dst = f
		return nil
	}}
}

// duration parses a Go duration (10s, 1m30s) that is at least lo.
func duration(dst *time.Duration, lo time.Duration) value {
	accepts := "duration ≥ " + shortDuration(lo)
	if lo == time.Nanosecond {
		accepts = "positive duration"
	}
	return value{accepts: accepts + " (e.g. 500ms, 10s, 1m)", set: func(v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return errors.New("must be a duration such as 500ms, 10s or 1m")
		}
		if d < lo {
			if lo == time.Nanosecond {
				return errors.New("must be a positive duration")
			}
			return fmt.Errorf("must be at least %s", lo)
		}
		*dst = d
		return nil
	}}
}

// shortDuration writes d without trailing zero units: 1m rather than 1m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func oneOf(dst *string, allowed ...string) value {
	return value{accepts: "one of " + strings.Join(allowed, ", "), set: func(v string) error {
		if !slices.Contains(allowed, v) {
			return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
		}
		*dst = v
		return nil
	}}
}

// list splits a comma-separated list, dropping blanks; it must keep at least one entry.
func list(dst *[]string) value {
	return value{accepts: "comma-separated list of at least one path", set: func(v string) error {
		var out []string
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
		if len(out) == 0 {
			return errors.New("must list at least one path")
		}
		*dst = out
		return nil
	}}
}

// endpoint accepts an empty value or an absolute URL with a host.
func endpoint(dst *string) value {
	return value{accepts: "empty, or an absolute URL with a host", set: func(v string) error {
		if v != "" {
			u, err := url.Parse(v)
			if err != nil || !u.IsAbs() || u.Hostname() == "" {
				return errors.New("must be an absolute URL such as https://example.com")
			}
		}
		*dst = v
		return nil
	}}
}

// dnsSubdomain accepts a valid Kubernetes object name.
func dnsSubdomain(dst *string) value {
	return value{accepts: "Kubernetes object name (DNS-1123 subdomain)", set: func(v string) error {
		if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
			return fmt.Errorf("must be a valid object name, %s", strings.Join(msgs, "; "))
		}
		*dst = v
		return nil
	}}
}

// dnsLabel accepts an empty value or a valid namespace name.
func dnsLabel(dst *string) value {
	return value{accepts: "empty, or a namespace name (DNS-1123 label)", set: func(v string) error {
		if v != "" {
			if msgs := validation.IsDNS1123Label(v); len(msgs) > 0 {
				return fmt.Errorf("must be a valid namespace name, %s", strings.Join(msgs, "; "))
			}
		}
		*dst = v
		return nil
	}}
}

func gates(dst *FeatureGates) value {
	return value{accepts: "comma-separated Gate=true or Gate=false; gates: " + knownGates(), set: func(v string) error {
		g, err := ParseFeatureGates(v)
		if err != nil {
			return err
		}
		*dst = g
		return nil
	}}
}
