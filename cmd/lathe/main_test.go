package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/lathe-autoscaler/lathe/pkg/loopback"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

// binary is the lathe executable TestMain builds.
var binary string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "lathe-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating temp dir, %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "lathe")
	// go test puts $GOROOT/bin first on PATH, so this is the toolchain running the tests.
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.9.9-test -X main.commit=0123abcd", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building lathe, %v\n", err)
		return 1
	}
	return m.Run()
}

// result is how a finished lathe process ended.
type result struct {
	code           int
	stdout, stderr string
}

// command prepares lathe with exactly the given environment (plus PATH and a scratch HOME), so nothing from
// the test process's environment, such as KUBECONFIG, leaks in.
func command(ctx context.Context, t *testing.T, vars map[string]string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd, &stdout, &stderr
}

// runLathe runs lathe to completion; a run that doesn't end within a minute fails the test.
func runLathe(t *testing.T, vars map[string]string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, stdout, stderr := command(ctx, t, vars, args...)
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("lathe %v did not exit: stdout %q stderr %q", args, stdout, stderr)
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("running lathe, %v", err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

func TestInvalidSettingsExitWithCode2(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		args []string
		want []string
	}{
		{"missing cluster name", nil, nil, []string{"CLUSTER_NAME", "required"}},
		{"bad batch idle duration", map[string]string{"CLUSTER_NAME": "c", "BATCH_IDLE_DURATION": "banana"}, nil, []string{"BATCH_IDLE_DURATION", `"banana"`}},
		{"unknown feature gate", map[string]string{"CLUSTER_NAME": "c", "FEATURE_GATES": "Bogus=true"}, nil, []string{"FEATURE_GATES", "Bogus"}},
		{"bad port flag", map[string]string{"CLUSTER_NAME": "c"}, []string{"--metrics-port=70000"}, []string{"metrics-port", `"70000"`}},
		{"unknown flag", map[string]string{"CLUSTER_NAME": "c"}, []string{"--bogus"}, []string{"bogus"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runLathe(t, tt.vars, tt.args...)
			if got.code != 2 {
				t.Errorf("exit code = %d, want 2 (stderr %q)", got.code, got.stderr)
			}
			for _, fragment := range append(tt.want, "invalid settings") {
				if !strings.Contains(got.stderr, fragment) {
					t.Errorf("stderr = %q, want it to contain %q", got.stderr, fragment)
				}
			}
			if got.stdout != "" {
				t.Errorf("stdout = %q, want nothing", got.stdout)
			}
		})
	}
}

func TestHelpExitsWithCode0(t *testing.T) {
	got := runLathe(t, nil, "--help")
	if got.code != 0 {
		t.Errorf("exit code = %d, want 0 (stderr %q)", got.code, got.stderr)
	}
	for _, fragment := range []string{"--cluster-name, CLUSTER_NAME", "--batch-idle-duration, BATCH_IDLE_DURATION"} {
		if !strings.Contains(got.stdout, fragment) {
			t.Errorf("stdout lacks %q:\n%s", fragment, got.stdout)
		}
	}
}

func TestVersionPrintsVersionAndCommit(t *testing.T) {
	for _, arg := range []string{"--version", "-version"} {
		got := runLathe(t, nil, arg)
		if got.code != 0 {
			t.Errorf("lathe %s: exit code = %d, want 0 (stderr %q)", arg, got.code, got.stderr)
		}
		if !strings.HasPrefix(got.stdout, "lathe v9.9.9-test commit 0123abcd ") {
			t.Errorf("lathe %s: stdout = %q, want it to start with the stamped version and commit", arg, got.stdout)
		}
	}
}

// TestRunsAndStopsOnSIGTERM runs the binary against a test API server through a kubeconfig file, waits until
// it is ready, sends SIGTERM and expects a clean exit that releases the Lease.
func TestRunsAndStopsOnSIGTERM(t *testing.T) {
	env, err := environment.Start()
	if err != nil {
		t.Fatalf("starting test API server, %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping test API server, %v", err)
		}
	})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfig(t, env.Config, kubeconfig)
	healthPort, metricsPort := freePort(t), freePort(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, stdout, stderr := command(ctx, t, map[string]string{
		"KUBECONFIG":        kubeconfig,
		"CLUSTER_NAME":      "binary-test",
		"HEALTH_PROBE_PORT": fmt.Sprint(healthPort),
		"METRICS_PORT":      fmt.Sprint(metricsPort),
	})
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting lathe, %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	if !eventually(ctx, func() bool { return httpStatus(healthPort, "/readyz") == http.StatusOK && holder(ctx, env) != "" }) {
		cancel()
		<-exited
		t.Fatalf("lathe never became ready and leader: stdout %q stderr %q", stdout, stderr)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("sending SIGTERM, %v", err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("lathe exited with %v after SIGTERM: stdout %q stderr %q", err, stdout, stderr)
	}
	if h := holder(ctx, env); h != "" {
		t.Errorf("Lease holder after shutdown = %q, want it released", h)
	}
	started := false
	for _, line := range jsonLines(t, stdout.String()) {
		if line["message"] == "controller started" && line["version"] == "v9.9.9-test" && line["clusterName"] == "binary-test" {
			started = true
		}
	}
	if !started {
		t.Errorf("no \"controller started\" line with the build version on stdout:\n%s", stdout)
	}
}

func writeKubeconfig(t *testing.T, cfg *rest.Config, path string) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatalf("writing kubeconfig, %v", err)
	}
}

// holder returns the holder of the default leader election Lease, or "" if there is none.
func holder(ctx context.Context, env *environment.Environment) string {
	lease := &coordinationv1.Lease{}
	key := types.NamespacedName{Namespace: "kube-system", Name: "karpenter-leader-election"}
	if err := env.Client.Get(ctx, key, lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// eventually polls check until it is true or ctx ends.
func eventually(ctx context.Context, check func() bool) bool {
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for !check() {
		select {
		case <-ctx.Done():
			return false
		case <-ticker.C:
		}
	}
	return true
}

func httpStatus(port int, path string) int {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

func freePort(t *testing.T) int {
	t.Helper()
	ports, err := loopback.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

func jsonLines(t *testing.T, text string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	scanner := bufio.NewScanner(strings.NewReader(text))
	for scanner.Scan() {
		var line map[string]any
		if err := json.Unmarshal(scanner.Bytes(), &line); err != nil {
			t.Errorf("stdout line %q is not JSON, %v", scanner.Text(), err)
			continue
		}
		lines = append(lines, line)
	}
	return lines
}
