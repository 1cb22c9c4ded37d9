package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lathe-autoscaler/lathe/pkg/apis/scheme"
	"github.com/lathe-autoscaler/lathe/pkg/localcluster"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

// suite is the cluster and Lathe process every test in this package shares.
type suite struct {
	cluster    *localcluster.Cluster
	lathe      *localcluster.Lathe
	latheBin   string
	kubeClient client.Client
	applier    *localcluster.Applier
	logs       *os.File
}

var s suite

// repoRoot is the module root, two folders above this package.
func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Join(wd, "..", "..")
}

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	ctx := context.Background()
	binDir, err := environment.BinDir()
	if err != nil {
		return 1, err
	}
	work, err := os.MkdirTemp("", "lathe-e2e-")
	if err != nil {
		return 1, err
	}
	if os.Getenv("LATHE_E2E_KEEP_WORK") == "" {
		defer os.RemoveAll(work)
	} else {
		fmt.Fprintln(os.Stderr, "e2e: keeping", work)
	}
	if s.logs, err = os.Create(filepath.Join(work, "cluster.log")); err != nil {
		return 1, err
	}
	s.latheBin = filepath.Join(work, "lathe")
	build := exec.Command("go", "build", "-o", s.latheBin, "./cmd/lathe")
	build.Dir, build.Stdout, build.Stderr = repoRoot(), os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return 1, fmt.Errorf("building lathe, %w", err)
	}
	copts := localcluster.Options{BinDir: binDir, WorkDir: work, Logs: s.logs}
	if os.Getenv("LATHE_E2E_AUDIT") != "" {
		if copts.AuditPolicyFile, copts.AuditLogPath, err = auditLog(work); err != nil {
			return 1, err
		}
	}
	s.cluster, err = localcluster.Start(ctx, copts)
	if err != nil {
		return 1, err
	}
	defer s.cluster.Stop()
	if err := setUpCluster(ctx); err != nil {
		return 1, err
	}
	if err := startLathe(ctx); err != nil {
		return 1, err
	}
	defer func() { _ = s.lathe.Stop() }()
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "e2e: cluster and lathe logs follow")
		tail(s.logs, 200)
	}
	return code, nil
}

// auditPolicy records every request's metadata (who, what, when, outcome), the body of Node, NodeClaim and
// pod status patches (hints set and cleared) and of bindings (where each pod went).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  verbs: [patch]
  resources: [{group: "", resources: [nodes, pods/status]}, {group: karpenter.sh, resources: [nodeclaims, nodeclaims/status]}]
- level: Request
  verbs: [create]
  resources: [{group: "", resources: [pods/binding]}]
- level: Metadata
`

// auditLog writes the audit policy into work and returns it with the path of the audit log, for
// LATHE_E2E_AUDIT=1: with LATHE_E2E_KEEP_WORK=1 the log stays in the work directory, to count the requests
// each component makes (docs/performance.md, "what the API server spends its time on").
func auditLog(work string) (string, string, error) {
	policy := filepath.Join(work, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return "", "", fmt.Errorf("writing the audit policy, %w", err)
	}
	return policy, filepath.Join(work, "audit.log"), nil
}

// setUpCluster installs the CRDs and the getting-started NodePool and EC2NodeClass.
func setUpCluster(ctx context.Context) error {
	var err error
	if s.applier, err = localcluster.NewApplier(s.cluster.RESTConfig()); err != nil {
		return err
	}
	if err := s.applier.InstallCRDs(ctx); err != nil {
		return err
	}
	manifest, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "tutorial-nodepool.yaml"))
	if err != nil {
		return err
	}
	if _, err := s.applier.Apply(ctx, manifest, map[string]string{"CLUSTER_NAME": "e2e", "AMD_AMI_ID": "ami-0123456789abcdef0"}); err != nil {
		return fmt.Errorf("applying the tutorial nodepool, %w", err)
	}
	sch, err := scheme.New()
	if err != nil {
		return err
	}
	s.kubeClient, err = client.New(s.cluster.RESTConfig(), client.Options{Scheme: sch})
	return err
}

// startLathe starts (or restarts) the lathe process against the cluster.
func startLathe(ctx context.Context) error {
	var err error
	s.lathe, err = startLatheEnv(ctx)
	return err
}

// startLatheEnv starts a lathe process with extra environment; LATHE_E2E_LOG_LEVEL sets its LOG_LEVEL, and
// LATHE_E2E_LATHE_ENV adds settings to every lathe process (space-separated NAME=value, for example
// NOMINATED_NODE_NAME=false to measure a benchmark as before hints).
func startLatheEnv(ctx context.Context, env ...string) (*localcluster.Lathe, error) {
	if level := os.Getenv("LATHE_E2E_LOG_LEVEL"); level != "" {
		env = append(env, "LOG_LEVEL="+level)
	}
	env = append(strings.Fields(os.Getenv("LATHE_E2E_LATHE_ENV")), env...) // a test's own settings win
	return localcluster.StartLathe(ctx, localcluster.LatheOptions{
		Binary: s.latheBin, Kubeconfig: s.cluster.Kubeconfig(), ClusterName: "e2e", Logs: s.logs,
		Env: append([]string{"BATCH_IDLE_DURATION=1s", "BATCH_MAX_DURATION=10s"}, env...),
	})
}

// eventually polls cond every 250ms until it is true, fails the test at timeout, and stops on an error.
func eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, cond)
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// tail prints the last n lines of f to stderr.
func tail(f *os.File, n int) {
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	fmt.Fprintln(os.Stderr, strings.Join(lines, "\n"))
}
