package options

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Policy, log level and cloud provider values accepted by the settings of the same name.
const (
	PreferencePolicyRespect = "Respect"
	PreferencePolicyIgnore  = "Ignore"

	MinValuesPolicyStrict     = "Strict"
	MinValuesPolicyBestEffort = "BestEffort"

	LogLevelDebug = "debug"
	LogLevelInfo  = "info"
	LogLevelError = "error"

	// CloudProviderAWS launches EC2 instances.
	CloudProviderAWS = "aws"
	// CloudProviderSim is the simulated provider: it turns NodeClaims into Node objects without any cloud.
	CloudProviderSim = "sim"

	// NominatedNodeNameAuto sets pods' status.nominatedNodeName when the API server is v1.35 or later.
	NominatedNodeNameAuto = "auto"
)

// DefaultLeaderElectionNamespace is the Lease namespace used when neither LEADER_ELECTION_NAMESPACE nor
// SYSTEM_NAMESPACE is set.
const DefaultLeaderElectionNamespace = "kube-system"

// Options are Lathe's process settings. Parse fills every field; see Usage for the environment variables, flags
// and defaults.
type Options struct {
	// ClusterName names the cluster. It is required: it tags instances and scopes discovery.
	ClusterName string
	// ClusterEndpoint is the API server URL nodes join. Empty means discover it from the cloud provider.
	ClusterEndpoint string
	// ClusterCABundle is the base64 PEM CA bundle nodes use to trust the API server. Empty means discover it.
	ClusterCABundle string
	// InterruptionQueue is the SQS queue of interruption events. Empty turns interruption handling off.
	InterruptionQueue string

	// BatchMaxDuration is the longest a provisioning batch of pending pods may stay open.
	BatchMaxDuration time.Duration
	// BatchIdleDuration closes a provisioning batch once no new pending pod arrived for this long.
	BatchIdleDuration time.Duration

	// FeatureGates switches alpha and beta features on or off. Parse refuses to turn on a gate whose feature
	// Lathe does not build yet; controllers read the gates of features they build.
	FeatureGates FeatureGates
	// PreferencePolicy is Respect (preferred affinities count while scheduling, relaxed if they can't be met) or
	// Ignore (they are dropped).
	PreferencePolicy string
	// MinValuesPolicy is Strict (a NodeClaim that can't meet minValues is not launched) or BestEffort (minValues
	// is relaxed as far as needed).
	MinValuesPolicy string
	// IgnoreDRARequests makes scheduling ignore pods' dynamic resource allocation claims.
	IgnoreDRARequests bool

	// VMMemoryOverheadPercent is the fraction of an instance type's memory reserved for the hypervisor, in [0, 1).
	// The simulated provider's instance types take it off what each type's memory offers.
	VMMemoryOverheadPercent float64
	// ReservedENIs is the number of network interfaces kept back from the max-pods calculation.
	ReservedENIs int
	// IsolatedVPC means the VPC has no internet access, so public pricing and SSM endpoints are not used.
	IsolatedVPC bool
	// EKSControlPlane means the cluster is EKS, so missing cluster details can be asked of the EKS API.
	EKSControlPlane bool
	// DisableDryRun skips the EC2 dry-run calls that validate permissions at start-up.
	DisableDryRun bool
	// EnableZonalShift avoids zones under an active ARC zonal shift.
	EnableZonalShift bool
	// AMIRefreshInterval and SubnetRefreshInterval are how often AMIs and subnets are re-discovered; at least 1m.
	AMIRefreshInterval    time.Duration
	SubnetRefreshInterval time.Duration

	// KubeClientQPS and KubeClientBurst rate-limit requests to the API server.
	KubeClientQPS   int
	KubeClientBurst int
	// MetricsPort serves /metrics (and /debug/pprof with EnableProfiling). 0 disables the server.
	MetricsPort int
	// HealthProbePort serves /healthz and /readyz. 0 disables the server.
	HealthProbePort int

	// DisableLeaderElection runs without a Lease; only safe with a single replica.
	DisableLeaderElection bool
	// LeaderElectionName is the name of the leader election Lease.
	LeaderElectionName string
	// LeaderElectionNamespace is the namespace of the Lease. Parse resolves an empty value to SystemNamespace,
	// or to DefaultLeaderElectionNamespace when that is empty too.
	LeaderElectionNamespace string
	// SystemNamespace is the namespace Lathe is installed in (set by the Helm chart).
	SystemNamespace string

	// DisableControllerWarmup stops controllers from starting their watches before this replica is leader.
	DisableControllerWarmup bool
	// DisableClusterStateObservability turns off the cluster state metrics.
	DisableClusterStateObservability bool
	// EnableProfiling serves net/http/pprof under /debug/pprof/ on the metrics port.
	EnableProfiling bool

	// MemoryLimit is the container memory limit in bytes; when positive the Go soft memory limit is set to 90%
	// of it. Zero or negative means no limit.
	MemoryLimit int64
	// CPURequests is the container CPU request in millicores. Karpenter's chart always sets it; Karpenter
	// scales controller concurrency with it, Lathe accepts any value and does not use it.
	CPURequests int64

	// LogLevel is debug, info or error.
	LogLevel string
	// LogOutputPaths and LogErrorOutputPaths are zap sinks: stdout, stderr or file paths. Log entries go to the
	// first; zap's own internal errors go to the second.
	LogOutputPaths      []string
	LogErrorOutputPaths []string

	// KarpenterService is accepted for compatibility with Karpenter's Helm chart and not used.
	KarpenterService string
	// CloudProvider picks the provider: aws or sim.
	CloudProvider string
	// NominatedNodeName is auto, true or false: whether Lathe sets the status.nominatedNodeName of pending
	// pods to the Node it planned them onto (KEP-5278); auto means when the API server is v1.35 or later.
	NominatedNodeName string
	// PlanUntriedPods plans pending pods the kube-scheduler has not tried yet, a second after their creation,
	// with those it marked unschedulable.
	PlanUntriedPods bool
	// SimLaunchDelay is how long a simulated instance takes to appear as a Node (CLOUD_PROVIDER=sim only).
	SimLaunchDelay time.Duration
}

// Parse builds Options from command-line arguments (without the program name) and environment variables read
// through getenv. A flag overrides its environment variable, which overrides the default. The error names the
// flag or environment variable and the bad value. For -h or --help the error wraps flag.ErrHelp.
func Parse(args []string, getenv func(string) string) (*Options, error) {
	o := &Options{}
	table := settings(o)
	fs := flag.NewFlagSet("lathe", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for _, s := range table {
		if s.isBool {
			fs.BoolFunc(s.flagName(), s.usage, s.set)
		} else {
			fs.Func(s.flagName(), s.usage, s.set)
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("parsing flags, %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("parsing flags, unexpected argument %q", fs.Arg(0))
	}
	fromFlag := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { fromFlag[f.Name] = true })

	var errs []error
	for _, s := range table {
		if fromFlag[s.flagName()] {
			continue
		}
		if v := getenv(s.env); v != "" {
			if err := s.set(v); err != nil {
				errs = append(errs, fmt.Errorf("invalid value %q for environment variable %s (flag --%s), %w", v, s.env, s.flagName(), err))
			}
			continue
		}
		if err := s.set(s.def); err != nil {
			// Defaults are constants; the unit tests make sure each one parses.
			errs = append(errs, fmt.Errorf("invalid default %q for %s, %w", s.def, s.env, err))
		}
	}
	if err := errors.Join(append(errs, o.validate())...); err != nil {
		return nil, err
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = o.SystemNamespace
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = DefaultLeaderElectionNamespace
	}
	return o, nil
}

// validate checks the rules that span more than one setting or that a default can't satisfy.
func (o *Options) validate() error {
	var errs []error
	if o.ClusterName == "" {
		errs = append(errs, errors.New("CLUSTER_NAME (flag --cluster-name) is required: set it to the name of the cluster"))
	}
	if o.MetricsPort != 0 && o.MetricsPort == o.HealthProbePort {
		errs = append(errs, fmt.Errorf("METRICS_PORT and HEALTH_PROBE_PORT are both %d: they must differ", o.MetricsPort))
	}
	return errors.Join(append(errs, o.unsupported())...)
}

// SoftMemoryLimit returns the Go soft memory limit to apply (90% of MemoryLimit) and whether there is one.
func (o *Options) SoftMemoryLimit() (int64, bool) {
	if o.MemoryLimit <= 0 {
		return 0, false
	}
	return int64(float64(o.MemoryLimit) * 0.9), true
}

// Usage writes every setting: flag, environment variable, default and description.
func Usage(w io.Writer) error {
	var b strings.Builder
	b.WriteString("Usage: lathe [flags]\n\nEach setting is a flag or an environment variable; the flag wins.\n\n")
	for _, s := range settings(&Options{}) {
		fmt.Fprintf(&b, "  --%s, %s (default %q)\n        %s\n", s.flagName(), s.env, s.def, s.usage)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing usage, %w", err)
	}
	return nil
}

// flagName is the setting's flag name: the environment variable in lower kebab case.
func (s setting) flagName() string {
	return strings.ReplaceAll(strings.ToLower(s.env), "_", "-")
}
