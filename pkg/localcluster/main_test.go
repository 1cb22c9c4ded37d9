package localcluster_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lathe-autoscaler/lathe/pkg/localcluster"
	"github.com/lathe-autoscaler/lathe/pkg/test/environment"
)

// standInEnv makes the test binary act as a stand-in for the Lathe binary instead of running tests. Its
// value picks the behaviour: "serve" serves /healthz and /env on HEALTH_PROBE_PORT until SIGTERM,
// "stubborn" does the same but ignores SIGTERM, "crash" prints a line and exits 3.
const standInEnv = "LOCALCLUSTER_TEST_STAND_IN"

func TestMain(m *testing.M) {
	if mode := os.Getenv(standInEnv); mode != "" {
		os.Exit(standIn(mode))
	}
	os.Exit(m.Run())
}

func standIn(mode string) int {
	if mode == "crash" {
		fmt.Println("stand-in: cannot reach the cluster")
		return 3
	}
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", os.Getenv("HEALTH_PROBE_PORT")))
	if err != nil {
		fmt.Println("stand-in:", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/env", func(w http.ResponseWriter, _ *http.Request) {
		env := map[string]string{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		_ = json.NewEncoder(w).Encode(env)
	})
	go func() { _ = http.Serve(l, mux) }()
	fmt.Println("stand-in: serving")
	for range terms {
		if mode != "stubborn" {
			fmt.Println("stand-in: stopping")
			return 0
		}
	}
	return 0
}

// binDir finds bin/ and fails the test, saying how to build them, when a binary is missing.
func binDir(t *testing.T) string {
	t.Helper()
	dir, err := environment.BinDir()
	if err != nil {
		t.Fatalf("finding the control-plane binaries (run 'make tools'), %v", err)
	}
	for _, name := range localcluster.Binaries() {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("bin/%s is missing: run 'make tools' to build the local cluster binaries (%v)", name, err)
		}
	}
	return dir
}

// repoRoot is the folder with go.mod above the working directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// assertGone fails unless the process and its process group no longer exist.
func assertGone(t *testing.T, name string, pid int) {
	t.Helper()
	for _, target := range []int{pid, -pid} {
		if err := syscall.Kill(target, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) still exists after Stop: kill(%d, 0) = %v", name, pid, target, err)
		}
	}
}

// processesMentioning lists the running processes whose command line contains s, from /proc.
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
		line := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if strings.Contains(line, s) {
			found = append(found, e.Name()+": "+line)
		}
	}
	return found
}
