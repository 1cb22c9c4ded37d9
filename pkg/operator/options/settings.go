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

// setting is one entry of the settings table: its environment variable (the flag name is derived from it), the
// default as text, and a setter that parses and checks one value and stores it in Options.
type setting struct {
	env    string
	def    string
	usage  string
	isBool bool
	set    func(string) error
}

// settings returns the table of every setting, bound to o. Parse and Usage both read it, so the flags, the
// environment variables, the defaults and the help text can't drift apart.
func settings(o *Options) []setting {
	return []setting{
		{env: "CLUSTER_NAME", usage: "Name of the cluster (required).", set: text(&o.ClusterName)},
		{env: "CLUSTER_ENDPOINT", usage: "API server URL for nodes to join; empty means discover it.", set: endpoint(&o.ClusterEndpoint)},
		{env: "CLUSTER_CA_BUNDLE", usage: "Base64 PEM CA bundle of the API server; empty means discover it.", set: text(&o.ClusterCABundle)},
		{env: "INTERRUPTION_QUEUE", usage: "SQS queue of interruption events; empty disables interruption handling.", set: text(&o.InterruptionQueue)},
		{env: "BATCH_MAX_DURATION", def: "10s", usage: "Longest time a provisioning batch stays open.", set: duration(&o.BatchMaxDuration, time.Nanosecond)},
		{env: "BATCH_IDLE_DURATION", def: "1s", usage: "Close a provisioning batch after this long without a new pending pod.", set: duration(&o.BatchIdleDuration, time.Nanosecond)},
		{env: "FEATURE_GATES", def: DefaultFeatureGates().String(), usage: "Comma-separated Gate=bool list; unlisted gates keep their default.", set: gates(&o.FeatureGates)},
		{env: "PREFERENCE_POLICY", def: PreferencePolicyRespect, usage: "Respect or Ignore preferred scheduling terms.", set: oneOf(&o.PreferencePolicy, PreferencePolicyRespect, PreferencePolicyIgnore)},
		{env: "MIN_VALUES_POLICY", def: MinValuesPolicyStrict, usage: "Strict or BestEffort handling of NodePool minValues.", set: oneOf(&o.MinValuesPolicy, MinValuesPolicyStrict, MinValuesPolicyBestEffort)},
		{env: "IGNORE_DRA_REQUESTS", def: "true", isBool: true, usage: "Ignore pods' dynamic resource allocation requests while scheduling.", set: boolean(&o.IgnoreDRARequests)},
		{env: "VM_MEMORY_OVERHEAD_PERCENT", def: "0.075", usage: "Fraction of instance memory reserved for the hypervisor, in [0, 1).", set: fraction(&o.VMMemoryOverheadPercent)},
		{env: "RESERVED_ENIS", def: "0", usage: "Network interfaces kept out of the max-pods calculation.", set: integer(&o.ReservedENIs, 0, math.MaxInt32)},
		{env: "ISOLATED_VPC", def: "false", isBool: true, usage: "The VPC has no internet access: skip public pricing and SSM lookups.", set: boolean(&o.IsolatedVPC)},
		{env: "EKS_CONTROL_PLANE", def: "false", isBool: true, usage: "The cluster is EKS: ask the EKS API for missing cluster details.", set: boolean(&o.EKSControlPlane)},
		{env: "DISABLE_DRY_RUN", def: "false", isBool: true, usage: "Skip the EC2 dry-run permission checks at start-up.", set: boolean(&o.DisableDryRun)},
		{env: "ENABLE_ZONAL_SHIFT", def: "false", isBool: true, usage: "Avoid zones under an active ARC zonal shift.", set: boolean(&o.EnableZonalShift)},
		{env: "AMI_REFRESH_INTERVAL", def: "1m", usage: "How often AMIs are re-discovered (at least 1m).", set: duration(&o.AMIRefreshInterval, time.Minute)},
		{env: "SUBNET_REFRESH_INTERVAL", def: "1m", usage: "How often subnets are re-discovered (at least 1m).", set: duration(&o.SubnetRefreshInterval, time.Minute)},
		{env: "KUBE_CLIENT_QPS", def: "200", usage: "Queries per second allowed to the API server.", set: integer(&o.KubeClientQPS, 1, math.MaxInt32)},
		{env: "KUBE_CLIENT_BURST", def: "300", usage: "Burst of queries allowed to the API server.", set: integer(&o.KubeClientBurst, 1, math.MaxInt32)},
		{env: "METRICS_PORT", def: "8080", usage: "Port of /metrics; 0 disables it.", set: integer(&o.MetricsPort, 0, math.MaxUint16)},
		{env: "HEALTH_PROBE_PORT", def: "8081", usage: "Port of /healthz and /readyz; 0 disables it.", set: integer(&o.HealthProbePort, 0, math.MaxUint16)},
		{env: "DISABLE_LEADER_ELECTION", def: "false", isBool: true, usage: "Run without a leader election Lease (single replica only).", set: boolean(&o.DisableLeaderElection)},
		{env: "LEADER_ELECTION_NAME", def: "karpenter-leader-election", usage: "Name of the leader election Lease.", set: dnsSubdomain(&o.LeaderElectionName)},
		{env: "LEADER_ELECTION_NAMESPACE", usage: "Namespace of the Lease; empty means SYSTEM_NAMESPACE, else kube-system.", set: dnsLabel(&o.LeaderElectionNamespace)},
		{env: "SYSTEM_NAMESPACE", usage: "Namespace Lathe runs in.", set: dnsLabel(&o.SystemNamespace)},
		{env: "DISABLE_CONTROLLER_WARMUP", def: "true", isBool: true, usage: "Don't start controller watches before this replica is leader.", set: boolean(&o.DisableControllerWarmup)},
		{env: "DISABLE_CLUSTER_STATE_OBSERVABILITY", def: "false", isBool: true, usage: "Turn off the cluster state metrics.", set: boolean(&o.DisableClusterStateObservability)},
		{env: "ENABLE_PROFILING", def: "false", isBool: true, usage: "Serve /debug/pprof/ on the metrics port.", set: boolean(&o.EnableProfiling)},
		{env: "MEMORY_LIMIT", def: "-1", usage: "Container memory limit in bytes; when positive GOMEMLIMIT is set to 90% of it.", set: integer(&o.MemoryLimit, math.MinInt64, math.MaxInt64)},
		{env: "CPU_REQUESTS", def: "1000", usage: "Container CPU request in millicores.", set: integer(&o.CPURequests, 1, math.MaxInt64)},
		{env: "LOG_LEVEL", def: LogLevelInfo, usage: "debug, info or error.", set: oneOf(&o.LogLevel, LogLevelDebug, LogLevelInfo, LogLevelError)},
		{env: "LOG_OUTPUT_PATHS", def: "stdout", usage: "Comma-separated log sinks: stdout, stderr or file paths.", set: list(&o.LogOutputPaths)},
		{env: "LOG_ERROR_OUTPUT_PATHS", def: "stderr", usage: "Comma-separated sinks for the logger's own internal errors.", set: list(&o.LogErrorOutputPaths)},
		{env: "KARPENTER_SERVICE", usage: "Accepted for compatibility with Karpenter's chart; unused.", set: text(&o.KarpenterService)},
		{env: "CLOUD_PROVIDER", def: CloudProviderSim, usage: "Cloud provider: aws or sim (simulated, no cloud).", set: oneOf(&o.CloudProvider, CloudProviderAWS, CloudProviderSim)},
		{env: "NOMINATED_NODE_NAME", def: NominatedNodeNameAuto, usage: "auto, true or false: tell the kube-scheduler the Node each pod is planned onto (status.nominatedNodeName); auto means on API server v1.35+.", set: oneOf(&o.NominatedNodeName, NominatedNodeNameAuto, "true", "false")},
		{env: "SIM_LAUNCH_DELAY", def: "0s", usage: "With CLOUD_PROVIDER=sim: how long a launched instance takes to appear as a Node.", set: duration(&o.SimLaunchDelay, 0)},
	}
}

func text(dst *string) func(string) error {
	return func(v string) error {
		*dst = v
		return nil
	}
}

func boolean(dst *bool) func(string) error {
	return func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("must be true or false")
		}
		*dst = b
		return nil
	}
}

// integer parses a base-10 integer in [lo, hi] into any integer field.
func integer[T int | int64](dst *T, lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < lo || n > hi {
			if lo == math.MinInt64 && hi == math.MaxInt64 {
				return errors.New("must be a whole number")
			}
			return fmt.Errorf("must be a whole number from %d to %d", lo, hi)
		}
		*dst = T(n)
		return nil
	}
}

func fraction(dst *float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || f < 0 || f >= 1 {
			return errors.New("must be a number from 0 up to (not including) 1, e.g. 0.075")
		}
		*dst = f
		return nil
	}
}

// duration parses a Go duration (10s, 1m30s) that is at least lo.
func duration(dst *time.Duration, lo time.Duration) func(string) error {
	return func(v string) error {
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
	}
}

func oneOf(dst *string, allowed ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(allowed, v) {
			return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
		}
		*dst = v
		return nil
	}
}

// list splits a comma-separated list, dropping blanks; it must keep at least one entry.
func list(dst *[]string) func(string) error {
	return func(v string) error {
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
	}
}

// endpoint accepts an empty value or an absolute URL with a host.
func endpoint(dst *string) func(string) error {
	return func(v string) error {
		if v != "" {
			u, err := url.Parse(v)
			if err != nil || !u.IsAbs() || u.Hostname() == "" {
				return errors.New("must be an absolute URL such as https://example.com")
			}
		}
		*dst = v
		return nil
	}
}

// dnsSubdomain accepts a valid Kubernetes object name.
func dnsSubdomain(dst *string) func(string) error {
	return func(v string) error {
		if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
			return fmt.Errorf("must be a valid object name, %s", strings.Join(msgs, "; "))
		}
		*dst = v
		return nil
	}
}

// dnsLabel accepts an empty value or a valid namespace name.
func dnsLabel(dst *string) func(string) error {
	return func(v string) error {
		if v != "" {
			if msgs := validation.IsDNS1123Label(v); len(msgs) > 0 {
				return fmt.Errorf("must be a valid namespace name, %s", strings.Join(msgs, "; "))
			}
		}
		*dst = v
		return nil
	}
}

func gates(dst *FeatureGates) func(string) error {
	return func(v string) error {
		g, err := ParseFeatureGates(v)
		if err != nil {
			return err
		}
		*dst = g
		return nil
	}
}
