package localcluster_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-autoscaler/lathe/pkg/localcluster"
)

// lockedBuffer collects a process's output; the output goroutines write while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startStandIn(t *testing.T, mode string, logs *lockedBuffer, grace time.Duration) (*localcluster.Lathe, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return localcluster.StartLathe(ctx, localcluster.LatheOptions{
		Binary:          self,
		Kubeconfig:      "/nonexistent/kubeconfig",
		ClusterName:     "stand-in",
		Env:             []string{standInEnv + "=" + mode, "LOG_LEVEL=debug"},
		Logs:            logs,
		StopGracePeriod: grace,
	})
}

func TestStartLatheRunsTheBinaryWithItsSettingsAndStopsIt(t *testing.T) {
	logs := &lockedBuffer{}
	lathe, err := startStandIn(t, "serve", logs, 10*time.Second)
	if err != nil {
		t.Fatalf("StartLathe() error = %v", err)
	}
	t.Cleanup(func() { _ = lathe.Stop() })

	resp, err := http.Get("http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(lathe.HealthProbePort)) + "/env")
	if err != nil {
		t.Fatalf("asking the stand-in for its environment, %v", err)
	}
	defer resp.Body.Close()
	env := map[string]string{}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatalf("decoding the stand-in's environment, %v", err)
	}
	want := map[string]string{
		"KUBECONFIG":              "/nonexistent/kubeconfig",
		"CLUSTER_NAME":            "stand-in",
		"METRICS_PORT":            strconv.Itoa(lathe.MetricsPort),
		"HEALTH_PROBE_PORT":       strconv.Itoa(lathe.HealthProbePort),
		"DISABLE_LEADER_ELECTION": "true",
		"LOG_LEVEL":               "debug",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("stand-in environment %s = %q, want %q", k, env[k], v)
		}
	}
	if lathe.MetricsPort == lathe.HealthProbePort {
		t.Errorf("metrics and health probe share port %d", lathe.MetricsPort)
	}

	if err := lathe.Stop(); err != nil {
		t.Fatalf("Stop() error = %v", err)
	}
	if err := lathe.Err(); err != nil {
		t.Errorf("Err() after Stop = %v, want nil", err)
	}
	assertGone(t, "stand-in", lathe.PID())
	if out := logs.String(); !strings.Contains(out, "[lathe] stand-in: serving\n") || !strings.Contains(out, "[lathe] stand-in: stopping\n") {
		t.Errorf("output was not passed on line by line with the [lathe] prefix:\n%s", out)
	}
}

func TestStartLatheReportsABinaryThatExits(t *testing.T) {
	_, err := startStandIn(t, "crash", &lockedBuffer{}, time.Second)
	if err == nil {
		t.Fatal("StartLathe() error = nil for a binary that exits at once")
	}
	for _, want := range []string{"exited unexpectedly", "exit status 3", "stand-in: cannot reach the cluster"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("StartLathe() error = %q, want it to contain %q", err, want)
		}
	}
}

func TestStopKillsAProcessThatIgnoresSIGTERM(t *testing.T) {
	logs := &lockedBuffer{}
	lathe, err := startStandIn(t, "stubborn", logs, time.Second)
	if err != nil {
		t.Fatalf("StartLathe() error = %v", err)
	}
	if err := lathe.Stop(); err != nil {
		t.Fatalf("Stop() error = %v", err)
	}
	select {
	case <-lathe.Done():
	default:
		t.Fatal("Done() is not closed after Stop returned")
	}
	assertGone(t, "stubborn stand-in", lathe.PID())
	if !strings.Contains(logs.String(), "sending SIGKILL") {
		t.Errorf("the SIGKILL was not noted in the output:\n%s", logs.String())
	}
}

func TestStartLatheFailsClearlyWithoutTheBinary(t *testing.T) {
	_, err := localcluster.StartLathe(context.Background(), localcluster.LatheOptions{Binary: t.TempDir() + "/lathe"})
	if err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("StartLathe() error = %v, want one that says to run make build", err)
	}
}

func TestStartFailsClearlyWithoutTheBinaries(t *testing.T) {
	_, err := localcluster.Start(context.Background(), localcluster.Options{BinDir: t.TempDir(), WorkDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "make tools") {
		t.Fatalf("Start() error = %v, want one that says to run make tools", err)
	}
}

func TestStartRefusesHalfAnAuditLog(t *testing.T) {
	for _, opts := range []localcluster.Options{{AuditLogPath: "audit.log"}, {AuditPolicyFile: "policy.yaml"}} {
		opts.BinDir, opts.WorkDir = t.TempDir(), t.TempDir()
		_, err := localcluster.Start(context.Background(), opts)
		if err == nil || !strings.Contains(err.Error(), "AuditPolicyFile and AuditLogPath") {
			t.Errorf("Start(%+v) error = %v, want one asking for both audit options", opts, err)
		}
	}
}
