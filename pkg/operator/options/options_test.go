package options_test

import (
	"bytes"
	"errors"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lathe-autoscaler/lathe/pkg/operator/options"
)

// env turns a map into the getenv function Parse takes.
func env(vars map[string]string) func(string) string {
	return func(key string) string { return vars[key] }
}

// required is the smallest valid environment.
func required() map[string]string {
	return map[string]string{"CLUSTER_NAME": "test-cluster"}
}

func with(extra map[string]string) map[string]string {
	vars := required()
	for k, v := range extra {
		vars[k] = v
	}
	return vars
}

func TestDefaults(t *testing.T) {
	got, err := options.Parse(nil, env(required()))
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	want := &options.Options{
		ClusterName:                      "test-cluster",
		BatchMaxDuration:                 10 * time.Second,
		BatchIdleDuration:                time.Second,
		FeatureGates:                     options.FeatureGates{ReservedCapacity: true},
		PreferencePolicy:                 "Respect",
		MinValuesPolicy:                  "Strict",
		IgnoreDRARequests:                true,
		VMMemoryOverheadPercent:          0.075,
		AMIRefreshInterval:               time.Minute,
		SubnetRefreshInterval:            time.Minute,
		KubeClientQPS:                    200,
		KubeClientBurst:                  300,
		MetricsPort:                      8080,
		HealthProbePort:                  8081,
		LeaderElectionName:               "karpenter-leader-election",
		LeaderElectionNamespace:          "kube-system",
		DisableControllerWarmup:          true,
		MemoryLimit:                      -1,
		CPURequests:                      1000,
		LogLevel:                         "info",
		LogOutputPaths:                   []string{"stdout"},
		LogErrorOutputPaths:              []string{"stderr"},
		CloudProvider:                    "sim",
		NominatedNodeName:                "auto",
		PlanUntriedPods:                  true,
		DisableLeaderElection:            false,
		DisableClusterStateObservability: false,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse() defaults\n got: %+v\nwant: %+v", got, want)
	}
	if _, ok := got.SoftMemoryLimit(); ok {
		t.Errorf("SoftMemoryLimit() reports a limit for MEMORY_LIMIT=-1")
	}
}

func TestFromEnvironment(t *testing.T) {
	got, err := options.Parse(nil, env(map[string]string{
		"CLUSTER_NAME":                        "prod",
		"CLUSTER_ENDPOINT":                    "https://ABCD.gr7.us-west-2.eks.amazonaws.com",
		"CLUSTER_CA_BUNDLE":                   "Y2E=",
		"INTERRUPTION_QUEUE":                  "prod-queue",
		"BATCH_MAX_DURATION":                  "30s",
		"BATCH_IDLE_DURATION":                 "500ms",
		"FEATURE_GATES":                       "NodeRepair=false, SpotToSpotConsolidation=false,ReservedCapacity=false",
		"PREFERENCE_POLICY":                   "Ignore",
		"MIN_VALUES_POLICY":                   "BestEffort",
		"IGNORE_DRA_REQUESTS":                 "true",
		"VM_MEMORY_OVERHEAD_PERCENT":          "0.1",
		"RESERVED_ENIS":                       "0",
		"ISOLATED_VPC":                        "true",
		"EKS_CONTROL_PLANE":                   "true",
		"DISABLE_DRY_RUN":                     "true",
		"ENABLE_ZONAL_SHIFT":                  "true",
		"AMI_REFRESH_INTERVAL":                "5m",
		"SUBNET_REFRESH_INTERVAL":             "2m",
		"KUBE_CLIENT_QPS":                     "50",
		"KUBE_CLIENT_BURST":                   "100",
		"METRICS_PORT":                        "9000",
		"HEALTH_PROBE_PORT":                   "0",
		"DISABLE_LEADER_ELECTION":             "true",
		"LEADER_ELECTION_NAME":                "lathe-leader",
		"SYSTEM_NAMESPACE":                    "karpenter",
		"DISABLE_CONTROLLER_WARMUP":           "false",
		"DISABLE_CLUSTER_STATE_OBSERVABILITY": "false",
		"ENABLE_PROFILING":                    "true",
		"MEMORY_LIMIT":                        "1000",
		"CPU_REQUESTS":                        "250",
		"LOG_LEVEL":                           "debug",
		"LOG_OUTPUT_PATHS":                    "stdout, /tmp/lathe.log",
		"LOG_ERROR_OUTPUT_PATHS":              "/tmp/lathe-errors.log",
		"KARPENTER_SERVICE":                   "karpenter",
		"CLOUD_PROVIDER":                      "aws",
		"SIM_LAUNCH_DELAY":                    "3s",
		"NOMINATED_NODE_NAME":                 "false",
		"PLAN_UNTRIED_PODS":                   "false",
	}))
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	want := &options.Options{
		ClusterName:                      "prod",
		ClusterEndpoint:                  "https://ABCD.gr7.us-west-2.eks.amazonaws.com",
		ClusterCABundle:                  "Y2E=",
		InterruptionQueue:                "prod-queue",
		BatchMaxDuration:                 30 * time.Second,
		BatchIdleDuration:                500 * time.Millisecond,
		FeatureGates:                     options.FeatureGates{},
		PreferencePolicy:                 "Ignore",
		MinValuesPolicy:                  "BestEffort",
		IgnoreDRARequests:                true,
		VMMemoryOverheadPercent:          0.1,
		ReservedENIs:                     0,
		IsolatedVPC:                      true,
		EKSControlPlane:                  true,
		DisableDryRun:                    true,
		EnableZonalShift:                 true,
		AMIRefreshInterval:               5 * time.Minute,
		SubnetRefreshInterval:            2 * time.Minute,
		KubeClientQPS:                    50,
		KubeClientBurst:                  100,
		MetricsPort:                      9000,
		HealthProbePort:                  0,
		DisableLeaderElection:            true,
		LeaderElectionName:               "lathe-leader",
		LeaderElectionNamespace:          "karpenter",
		SystemNamespace:                  "karpenter",
		DisableControllerWarmup:          false,
		DisableClusterStateObservability: false,
		EnableProfiling:                  true,
		MemoryLimit:                      1000,
		CPURequests:                      250,
		LogLevel:                         "debug",
		LogOutputPaths:                   []string{"stdout", "/tmp/lathe.log"},
		LogErrorOutputPaths:              []string{"/tmp/lathe-errors.log"},
		KarpenterService:                 "karpenter",
		CloudProvider:                    "aws",
		SimLaunchDelay:                   3 * time.Second,
		NominatedNodeName:                "false",
		PlanUntriedPods:                  false,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse() from environment\n got: %+v\nwant: %+v", got, want)
	}
	if limit, ok := got.SoftMemoryLimit(); !ok || limit != 900 {
		t.Errorf("SoftMemoryLimit() = %d, %t; want 900, true", limit, ok)
	}
}

func TestFlagOverridesEnvironment(t *testing.T) {
	vars := with(map[string]string{
		"BATCH_IDLE_DURATION":       "banana", // ignored: the flag wins
		"LEADER_ELECTION_NAMESPACE": "from-env",
		"DISABLE_LEADER_ELECTION":   "true",
		"LOG_LEVEL":                 "debug",
		"FEATURE_GATES":             "NodeRepair=true", // ignored: the flag wins
	})
	got, err := options.Parse([]string{
		"--cluster-name=from-flag",
		"--batch-idle-duration", "2s",
		"--leader-election-namespace=from-flag",
		"--disable-leader-election=false",
		"--log-level=error",
		"--feature-gates=ReservedCapacity=false",
		"--enable-profiling",
		"-kube-client-qps=7",
	}, env(vars))
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"ClusterName", got.ClusterName, "from-flag"},
		{"BatchIdleDuration", got.BatchIdleDuration, 2 * time.Second},
		{"LeaderElectionNamespace", got.LeaderElectionNamespace, "from-flag"},
		{"DisableLeaderElection", got.DisableLeaderElection, false},
		{"LogLevel", got.LogLevel, "error"},
		{"FeatureGates", got.FeatureGates, options.FeatureGates{}},
		{"EnableProfiling", got.EnableProfiling, true},
		{"KubeClientQPS", got.KubeClientQPS, 7},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestLeaderElectionNamespace(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"default", nil, "kube-system"},
		{"system namespace", map[string]string{"SYSTEM_NAMESPACE": "karpenter"}, "karpenter"},
		{"explicit wins", map[string]string{"SYSTEM_NAMESPACE": "karpenter", "LEADER_ELECTION_NAMESPACE": "lease-ns"}, "lease-ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := options.Parse(nil, env(with(tt.vars)))
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			if got.LeaderElectionNamespace != tt.want {
				t.Errorf("LeaderElectionNamespace = %q, want %q", got.LeaderElectionNamespace, tt.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		vars map[string]string
		// want lists fragments the error must contain: the setting's name and the bad value.
		want []string
	}{
		{"missing cluster name", nil, map[string]string{}, []string{"CLUSTER_NAME", "required"}},
		{"empty cluster name flag", []string{"--cluster-name="}, required(), []string{"CLUSTER_NAME", "required"}},
		{"bad duration", nil, with(map[string]string{"BATCH_IDLE_DURATION": "banana"}), []string{"BATCH_IDLE_DURATION", `"banana"`, "duration"}},
		{"zero duration", nil, with(map[string]string{"BATCH_MAX_DURATION": "0s"}), []string{"BATCH_MAX_DURATION", `"0s"`, "positive"}},
		{"negative duration", nil, with(map[string]string{"BATCH_IDLE_DURATION": "-1s"}), []string{"BATCH_IDLE_DURATION", `"-1s"`}},
		{"refresh below minimum", nil, with(map[string]string{"AMI_REFRESH_INTERVAL": "30s"}), []string{"AMI_REFRESH_INTERVAL", `"30s"`, "at least 1m"}},
		{"subnet refresh below minimum", nil, with(map[string]string{"SUBNET_REFRESH_INTERVAL": "59s"}), []string{"SUBNET_REFRESH_INTERVAL", `"59s"`}},
		{"negative qps", nil, with(map[string]string{"KUBE_CLIENT_QPS": "-5"}), []string{"KUBE_CLIENT_QPS", `"-5"`}},
		{"zero burst", nil, with(map[string]string{"KUBE_CLIENT_BURST": "0"}), []string{"KUBE_CLIENT_BURST", `"0"`}},
		{"port too large", nil, with(map[string]string{"METRICS_PORT": "70000"}), []string{"METRICS_PORT", `"70000"`, "0 to 65535"}},
		{"negative port", nil, with(map[string]string{"HEALTH_PROBE_PORT": "-1"}), []string{"HEALTH_PROBE_PORT", `"-1"`}},
		{"port not a number", nil, with(map[string]string{"METRICS_PORT": "http"}), []string{"METRICS_PORT", `"http"`}},
		{"same ports", nil, with(map[string]string{"METRICS_PORT": "9000", "HEALTH_PROBE_PORT": "9000"}), []string{"METRICS_PORT", "HEALTH_PROBE_PORT", "9000"}},
		{"unknown log level", nil, with(map[string]string{"LOG_LEVEL": "verbose"}), []string{"LOG_LEVEL", `"verbose"`, "debug, info, error"}},
		{"unknown preference policy", nil, with(map[string]string{"PREFERENCE_POLICY": "respect"}), []string{"PREFERENCE_POLICY", `"respect"`, "Respect, Ignore"}},
		{"unknown min values policy", nil, with(map[string]string{"MIN_VALUES_POLICY": "Loose"}), []string{"MIN_VALUES_POLICY", `"Loose"`}},
		{"unknown cloud provider", nil, with(map[string]string{"CLOUD_PROVIDER": "gcp"}), []string{"CLOUD_PROVIDER", `"gcp"`}},
		{"negative launch delay", nil, with(map[string]string{"SIM_LAUNCH_DELAY": "-1s"}), []string{"SIM_LAUNCH_DELAY", `"-1s"`}},
		{"unknown nominated node name mode", nil, with(map[string]string{"NOMINATED_NODE_NAME": "yes"}), []string{"NOMINATED_NODE_NAME", `"yes"`}},
		{"bad bool", nil, with(map[string]string{"DISABLE_LEADER_ELECTION": "yes"}), []string{"DISABLE_LEADER_ELECTION", `"yes"`}},
		{"unknown feature gate", nil, with(map[string]string{"FEATURE_GATES": "Drift=true"}), []string{"FEATURE_GATES", "Drift", "unknown feature gate"}},
		{"feature gate without value", nil, with(map[string]string{"FEATURE_GATES": "NodeRepair"}), []string{"FEATURE_GATES", "NodeRepair"}},
		{"feature gate bad bool", nil, with(map[string]string{"FEATURE_GATES": "NodeRepair=maybe"}), []string{"FEATURE_GATES", "maybe"}},
		{"overhead too large", nil, with(map[string]string{"VM_MEMORY_OVERHEAD_PERCENT": "7.5"}), []string{"VM_MEMORY_OVERHEAD_PERCENT", `"7.5"`}},
		{"overhead negative", nil, with(map[string]string{"VM_MEMORY_OVERHEAD_PERCENT": "-0.1"}), []string{"VM_MEMORY_OVERHEAD_PERCENT", `"-0.1"`}},
		{"negative reserved ENIs", nil, with(map[string]string{"RESERVED_ENIS": "-1"}), []string{"RESERVED_ENIS", `"-1"`}},
		{"fractional CPU requests", nil, with(map[string]string{"CPU_REQUESTS": "0.5"}), []string{"CPU_REQUESTS", `"0.5"`}},
		{"memory limit not a number", nil, with(map[string]string{"MEMORY_LIMIT": "1Gi"}), []string{"MEMORY_LIMIT", `"1Gi"`}},
		{"relative endpoint", nil, with(map[string]string{"CLUSTER_ENDPOINT": "example.com"}), []string{"CLUSTER_ENDPOINT", `"example.com"`, "URL"}},
		{"bad lease name", nil, with(map[string]string{"LEADER_ELECTION_NAME": "Not_Valid"}), []string{"LEADER_ELECTION_NAME", `"Not_Valid"`}},
		{"bad lease namespace", nil, with(map[string]string{"LEADER_ELECTION_NAMESPACE": "a.b"}), []string{"LEADER_ELECTION_NAMESPACE", `"a.b"`}},
		{"empty output paths", nil, with(map[string]string{"LOG_OUTPUT_PATHS": " , "}), []string{"LOG_OUTPUT_PATHS"}},
		{"flag bad duration", []string{"--batch-max-duration=soon"}, required(), []string{"batch-max-duration", `"soon"`}},
		{"flag bad port", []string{"--health-probe-port", "65536"}, required(), []string{"health-probe-port", `"65536"`}},
		{"unknown flag", []string{"--no-such-flag"}, required(), []string{"no-such-flag"}},
		{"positional argument", []string{"extra"}, required(), []string{`"extra"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := options.Parse(tt.args, env(tt.vars))
			if err == nil {
				t.Fatalf("Parse() = %+v, want an error", got)
			}
			for _, fragment := range tt.want {
				if !strings.Contains(err.Error(), fragment) {
					t.Errorf("Parse() error = %q, want it to contain %q", err, fragment)
				}
			}
		})
	}
}

func TestErrorsAreReportedTogether(t *testing.T) {
	_, err := options.Parse(nil, env(map[string]string{"BATCH_IDLE_DURATION": "banana", "METRICS_PORT": "x"}))
	if err == nil {
		t.Fatal("Parse() error = nil, want an error")
	}
	for _, fragment := range []string{"BATCH_IDLE_DURATION", "METRICS_PORT"} {
		if !strings.Contains(err.Error(), fragment) {
			t.Errorf("Parse() error = %q, want it to contain %q", err, fragment)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		if _, err := options.Parse([]string{arg}, env(nil)); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("Parse(%s) error = %v, want flag.ErrHelp", arg, err)
		}
	}
	var out bytes.Buffer
	if err := options.Usage(&out); err != nil {
		t.Fatalf("Usage() error = %v", err)
	}
	for _, fragment := range []string{"CLUSTER_NAME", "--cluster-name", "BATCH_MAX_DURATION", "10s", "karpenter-leader-election", "NodeRepair=false,ReservedCapacity=true"} {
		if !strings.Contains(out.String(), fragment) {
			t.Errorf("Usage() output lacks %q:\n%s", fragment, out.String())
		}
	}
}

func TestFeatureGates(t *testing.T) {
	tests := []struct {
		in   string
		want options.FeatureGates
	}{
		{"", options.DefaultFeatureGates()},
		{"NodeRepair=true,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false", options.FeatureGates{NodeRepair: true, ReservedCapacity: true}},
		{"CapacityBuffer=true,StaticCapacity=true", options.FeatureGates{ReservedCapacity: true, CapacityBuffer: true, StaticCapacity: true}},
		{"NodeRepair=true,NodeRepair=false", options.DefaultFeatureGates()},
		{" ReservedCapacity = false ,", options.FeatureGates{}},
	}
	for _, tt := range tests {
		got, err := options.ParseFeatureGates(tt.in)
		if err != nil {
			t.Errorf("ParseFeatureGates(%q) error = %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseFeatureGates(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	const defaults = "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false"
	if got := options.DefaultFeatureGates().String(); got != defaults {
		t.Errorf("DefaultFeatureGates().String() = %q, want %q", got, defaults)
	}
}

// Settings Lathe parses but does not honour yet are refused when they ask for anything but Karpenter's
// default, with a message naming the setting; at their defaults (which Karpenter's chart writes) they pass.
func TestUnsupportedSettingsAreRefused(t *testing.T) {
	tests := []struct {
		vars map[string]string
		want []string // every one must appear in the error
	}{
		{map[string]string{"FEATURE_GATES": "NodeOverlay=true"}, []string{"FEATURE_GATES", "NodeOverlay=true", "not supported yet"}},
		{map[string]string{"FEATURE_GATES": "StaticCapacity=true,NodeOverlay=true"}, []string{"NodeOverlay=true"}},
		{map[string]string{"FEATURE_GATES": "CapacityBuffer=true"}, []string{"CapacityBuffer=true"}},
		{map[string]string{"RESERVED_ENIS": "1"}, []string{"RESERVED_ENIS=1 is not supported yet"}},
		{map[string]string{"IGNORE_DRA_REQUESTS": "false"}, []string{"IGNORE_DRA_REQUESTS=false is not supported yet"}},
		{map[string]string{"DISABLE_CLUSTER_STATE_OBSERVABILITY": "true"}, []string{"DISABLE_CLUSTER_STATE_OBSERVABILITY=true is not supported yet"}},
	}
	for _, tt := range tests {
		_, err := options.Parse(nil, env(with(tt.vars)))
		if err == nil {
			t.Errorf("Parse(%v) accepted an unsupported setting", tt.vars)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%v) error %q does not mention %q", tt.vars, err, w)
			}
		}
	}
	// What Karpenter's chart writes by default, and any CPU_REQUESTS it derives from the pod's request.
	chart := with(map[string]string{
		"FEATURE_GATES":       "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false",
		"CPU_REQUESTS":        "250",
		"MEMORY_LIMIT":        "1073741824",
		"IGNORE_DRA_REQUESTS": "true",
	})
	if _, err := options.Parse(nil, env(chart)); err != nil {
		t.Errorf("Parse() of the chart's defaults: %v", err)
	}
}

// RESERVED_ENIS is honoured by the AWS provider's instance types, so it is accepted with CLOUD_PROVIDER=aws.
func TestReservedENIsAcceptedWithTheAWSProvider(t *testing.T) {
	opts, err := options.Parse(nil, env(with(map[string]string{"RESERVED_ENIS": "1", "CLOUD_PROVIDER": "aws"})))
	if err != nil {
		t.Fatalf("RESERVED_ENIS=1 with CLOUD_PROVIDER=aws: %v", err)
	}
	if opts.ReservedENIs != 1 {
		t.Fatalf("ReservedENIs = %d, want 1", opts.ReservedENIs)
	}
}

// NodeRepair, SpotToSpotConsolidation and StaticCapacity are built: turning them on is accepted and
// reaches Options.
func TestBuiltGatesAreAccepted(t *testing.T) {
	opts, err := options.Parse(nil, env(with(map[string]string{"FEATURE_GATES": "NodeRepair=true,SpotToSpotConsolidation=true,StaticCapacity=true"})))
	if err != nil {
		t.Fatalf("FEATURE_GATES=NodeRepair=true,SpotToSpotConsolidation=true,StaticCapacity=true: %v", err)
	}
	if !opts.FeatureGates.NodeRepair || !opts.FeatureGates.SpotToSpotConsolidation || !opts.FeatureGates.StaticCapacity {
		t.Fatalf("FeatureGates %+v, want NodeRepair, SpotToSpotConsolidation and StaticCapacity on", opts.FeatureGates)
	}
}

// The reference lists every setting Parse reads, each with its flag, help line and what it accepts.
func TestReference(t *testing.T) {
	ref := options.Reference()
	seen := map[string]bool{}
	for _, s := range ref {
		if s.Description == "" || s.Accepts == "" {
			t.Errorf("%s: description %q, accepts %q; want both", s.Env, s.Description, s.Accepts)
		}
		if want := strings.ReplaceAll(strings.ToLower(s.Env), "_", "-"); s.Flag != want {
			t.Errorf("%s: flag %q, want %q", s.Env, s.Flag, want)
		}
		if seen[s.Env] {
			t.Errorf("%s is listed twice", s.Env)
		}
		seen[s.Env] = true
		if _, err := options.Parse([]string{"--" + s.Flag + "=" + s.Default}, env(required())); err != nil && s.Default != "" {
			t.Errorf("%s: its default %q does not parse as a flag: %v", s.Env, s.Default, err)
		}
	}
	var usage bytes.Buffer
	if err := options.Usage(&usage); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Count(usage.String(), "\n  --"), len(ref); got != want {
		t.Errorf("Usage lists %d settings, Reference %d", got, want)
	}
	accepts := map[string]string{}
	for _, s := range ref {
		accepts[s.Env] = s.Accepts
	}
	for env, want := range map[string]string{
		"AMI_REFRESH_INTERVAL": "duration ≥ 1m (e.g. 500ms, 10s, 1m)",
		"KUBE_CLIENT_QPS":      "whole number ≥ 1",
		"METRICS_PORT":         "whole number from 0 to 65535",
		"MEMORY_LIMIT":         "whole number",
		"SIM_LAUNCH_DELAY":     "duration ≥ 0s (e.g. 500ms, 10s, 1m)",
	} {
		if accepts[env] != want {
			t.Errorf("%s accepts %q, want %q", env, accepts[env], want)
		}
	}
}

// Karpenter's chart sets CPU_REQUESTS from the pod's CPU request, which the downward API gives as 0 when the
// pod has none; Karpenter then takes 1000, and so does Lathe.
func TestCPURequestsOfZeroMeansTheDefault(t *testing.T) {
	for _, v := range []string{"0", "-5"} {
		opts, err := options.Parse(nil, env(with(map[string]string{"CPU_REQUESTS": v})))
		if err != nil {
			t.Fatalf("CPU_REQUESTS=%s: %v", v, err)
		}
		if opts.CPURequests != 1000 {
			t.Errorf("CPU_REQUESTS=%s gives %d, want 1000", v, opts.CPURequests)
		}
	}
}
