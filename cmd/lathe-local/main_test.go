package main_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

const (
	// standInPIDFile makes the test binary act as a stand-in for bin/lathe: it serves /healthz on
	// HEALTH_PROBE_PORT, writes its pid and CLUSTER_NAME to the named file, and exits on SIGTERM.
	standInPIDFile = "LATHE_LOCAL_TEST_STAND_IN_PID_FILE"
	// waitTimeout bounds each wait; it is not a performance target.
	waitTimeout = 3 * time.Minute
)

func TestMain(m *testing.M) {
	if path := os.Getenv(standInPIDFile); path != "" {
		os.Exit(standIn(path))
	}
	os.Exit(m.Run())
}

func standIn(pidFile string) int {
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", os.Getenv("HEALTH_PROBE_PORT")))
	if err != nil {
		return 1
	}
	go func() { _ = http.Serve(l, http.NotFoundHandler()) }()
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+" "+os.Getenv("CLUSTER_NAME")), 0o600); err != nil {
		return 1
	}
	<-terms
	return 0
}

// launcher is a running lathe-local command.
type launcher struct {
	cmd     *exec.Cmd
	workDir string
	stdout  chan string
	stderr  *syncBuffer
	exited  chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startLauncher builds lathe-local and starts it with the given extra flags and environment, and waits
// until it says the cluster is ready.
func startLauncher(t *testing.T, env []string, args ...string) *launcher {
	t.Helper()
	bin, err := environment.BinDir()
	if err != nil {
		t.Fatalf("finding the control-plane binaries (run 'make tools'), %v", err)
	}
	tmp := t.TempDir()
	exe := filepath.Join(tmp, "lathe-local")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("building lathe-local, %v\n%s", err, out)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(tmp, "work")
	cmd := exec.Command(exe, append([]string{
		"--bin-dir=" + bin,
		"--work-dir=" + work,
		"--kubeconfig=" + filepath.Join(work, "kubeconfig"),
		"--nodepool=" + filepath.Join(root, "examples", "tutorial-nodepool.yaml"),
	}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	l := &launcher{cmd: cmd, workDir: work, stdout: make(chan string, 100), stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = l.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting lathe-local, %v", err)
	}
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			l.stdout <- scanner.Text()
		}
		close(l.stdout)
		_ = cmd.Wait()
		close(l.exited)
	}()
	t.Cleanup(func() {
		// Killing lathe-local kills its children too (Pdeathsig), should a test fail half way.
		_ = cmd.Process.Kill()
		<-l.exited
		if t.Failed() {
			t.Logf("lathe-local stderr:\n%s", l.stderr.String())
		}
	})
	var printed []string
	timeout := time.After(waitTimeout)
	for {
		select {
		case line, ok := <-l.stdout:
			if !ok {
				t.Fatalf("lathe-local exited before the cluster was ready; stdout:\n%s", strings.Join(printed, "\n"))
			}
			printed = append(printed, line)
			if strings.Contains(line, "Press Ctrl-C") {
				checkInstructions(t, strings.Join(printed, "\n"), filepath.Join(work, "kubeconfig"))
				return l
			}
		case <-timeout:
			t.Fatalf("lathe-local did not report a ready cluster in time; stdout:\n%s", strings.Join(printed, "\n"))
		}
	}
}

func checkInstructions(t *testing.T, printed, kubeconfig string) {
	t.Helper()
	for _, want := range []string{
		"export KUBECONFIG=" + kubeconfig,
		"bin/kubectl get nodepools",
		"bin/kubectl apply -f examples/inflate.yaml",
		"bin/kubectl scale deployment inflate --replicas 5",
		"bin/kubectl get nodeclaims,nodes -o wide",
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("lathe-local did not print %q; it printed:\n%s", want, printed)
		}
	}
}

// wait waits for lathe-local to exit and returns its exit code.
func (l *launcher) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-l.exited:
	case <-time.After(waitTimeout):
		t.Fatal("lathe-local did not exit in time")
	}
	return l.cmd.ProcessState.ExitCode()
}

// assertNothingLeft fails if a process still runs with the work folder in its command line, or the
// kubeconfig is still there.
func (l *launcher) assertNothingLeft(t *testing.T) {
	t.Helper()
	if left := processesMentioning(t, l.workDir); len(left) > 0 {
		t.Errorf("processes still running after lathe-local exited:\n%s", strings.Join(left, "\n"))
	}
	if _, err := os.Stat(filepath.Join(l.workDir, "kubeconfig")); !os.IsNotExist(err) {
		t.Errorf("kubeconfig still there after lathe-local exited (stat error %v)", err)
	}
}

func TestRunsClusterAndLatheUntilInterrupted(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "stand-in.pid")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l := startLauncher(t, []string{standInPIDFile + "=" + pidFile}, "--lathe-binary="+self)

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(l.workDir, "kubeconfig"))
	if err != nil {
		t.Fatalf("loading the kubeconfig lathe-local wrote, %v", err)
	}
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nodeClass := &unstructured.Unstructured{}
	nodeClass.SetAPIVersion("karpenter.k8s.aws/v1")
	nodeClass.SetKind("EC2NodeClass")
	if err := cl.Get(context.Background(), client.ObjectKey{Name: "default"}, nodeClass); err != nil {
		t.Fatalf("reading the tutorial EC2NodeClass, %v", err)
	}
	if role, _, _ := unstructured.NestedString(nodeClass.Object, "spec", "role"); role != "KarpenterNodeRole-lathe-local" {
		t.Errorf("EC2NodeClass role = %q, want KarpenterNodeRole-lathe-local", role)
	}
	standInPID, clusterName := readStandIn(t, pidFile)
	if clusterName != "lathe-local" {
		t.Errorf("lathe ran with CLUSTER_NAME %q, want lathe-local", clusterName)
	}

	if err := l.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := l.wait(t); code != 0 {
		t.Errorf("lathe-local exit code after Ctrl-C = %d, want 0", code)
	}
	l.assertNothingLeft(t)
	if err := syscall.Kill(standInPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the lathe process (pid %d) still exists: kill(pid, 0) = %v", standInPID, err)
	}
}

func TestExitsWithAnErrorWhenAComponentDies(t *testing.T) {
	l := startLauncher(t, nil, "--no-lathe")
	var kwok []int
	for _, p := range processesMentioning(t, l.workDir) {
		pid, line, _ := strings.Cut(p, ": ")
		if strings.Contains(line, "kwok --kubeconfig") {
			n, err := strconv.Atoi(pid)
			if err != nil {
				t.Fatal(err)
			}
			kwok = append(kwok, n)
		}
	}
	if len(kwok) != 1 {
		t.Fatalf("found %d kwok processes for this cluster, want 1", len(kwok))
	}
	if err := syscall.Kill(kwok[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := l.wait(t); code == 0 {
		t.Error("lathe-local exit code after kwok died = 0, want non-zero")
	}
	if !strings.Contains(l.stderr.String(), "kwok exited unexpectedly") {
		t.Errorf("lathe-local did not say kwok died; stderr:\n%s", l.stderr.String())
	}
	l.assertNothingLeft(t)
}

func readStandIn(t *testing.T, path string) (int, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the lathe stand-in did not start, %v", err)
	}
	pid, name, _ := strings.Cut(string(b), " ")
	n, err := strconv.Atoi(pid)
	if err != nil {
		t.Fatal(err)
	}
	return n, name
}

// processesMentioning lists "pid: command line" of the running processes whose command line contains s.
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("reading /proc, %v", err)
	}
	var found []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		line := strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
		if strings.Contains(line, s) && !strings.HasPrefix(line, os.Args[0]) {
			found = append(found, e.Name()+": "+line)
		}
	}
	return found
}
