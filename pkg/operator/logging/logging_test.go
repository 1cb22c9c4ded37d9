package logging_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/lathe-autoscaler/lathe/pkg/operator/logging"
)

// newFileLogger builds a logger that writes to a file in a temp dir and returns a function that flushes it and
// returns the decoded JSON lines.
func newFileLogger(t *testing.T, level string) (logr.Logger, func() []map[string]any) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lathe.log")
	logger, flush, err := logging.New(logging.Config{Level: level, OutputPaths: []string{path}})
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	return logger, func() []map[string]any {
		t.Helper()
		if err := flush(); err != nil {
			t.Fatalf("flush() error = %v", err)
		}
		return readLines(t, path)
	}
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("opening log file, %v", err)
	}
	defer f.Close()
	var lines []map[string]any
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		var line map[string]any
		if err := json.Unmarshal(scanner.Bytes(), &line); err != nil {
			t.Fatalf("log line %q is not JSON, %v", scanner.Text(), err)
		}
		lines = append(lines, line)
	}
	if err := scanner.Err(); err != nil {
		t.Fatalf("reading log file, %v", err)
	}
	return lines
}

func TestJSONShape(t *testing.T) {
	logger, read := newFileLogger(t, "info")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	logger.WithName("operator").WithValues("clusterName", "test").Info("controller started",
		"Node", klog.KObj(node), "Pod", klog.KRef("default", "web-0"), "ttl", 90*time.Second)
	lines := read()
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1: %v", len(lines), lines)
	}
	line := lines[0]
	want := map[string]any{
		"level":       "INFO",
		"logger":      "operator",
		"message":     "controller started",
		"clusterName": "test",
		"Node":        map[string]any{"name": "node-a"},
		"Pod":         map[string]any{"name": "web-0", "namespace": "default"},
		"ttl":         "1m30s",
	}
	for key, value := range want {
		got, _ := json.Marshal(line[key])
		exp, _ := json.Marshal(value)
		if string(got) != string(exp) {
			t.Errorf("%s = %s, want %s", key, got, exp)
		}
	}
	ts, _ := line["time"].(string)
	if _, err := time.Parse("2006-01-02T15:04:05.000Z0700", ts); err != nil {
		t.Errorf("time %q is not ISO8601, %v", ts, err)
	}
	if caller, _ := line["caller"].(string); !strings.HasPrefix(caller, "logging/logging_test.go:") {
		t.Errorf("caller = %q, want this test file", caller)
	}
	if _, ok := line["stacktrace"]; ok {
		t.Errorf("line has a stacktrace: %v", line)
	}
}

func TestLevels(t *testing.T) {
	tests := []struct {
		level string
		want  []string
	}{
		{"debug", []string{"info message", "debug message", "error message"}},
		{"info", []string{"info message", "error message"}},
		{"error", []string{"error message"}},
	}
	for _, tt := range tests {
		t.Run(tt.level, func(t *testing.T) {
			logger, read := newFileLogger(t, tt.level)
			logger.Info("info message")
			logger.V(1).Info("debug message")
			logger.V(2).Info("trace message")
			logger.Error(errors.New("boom"), "error message")
			var got []string
			for _, line := range read() {
				got = append(got, line["message"].(string))
				if line["message"] == "error message" && (line["error"] != "boom" || line["level"] != "ERROR") {
					t.Errorf("error line = %v, want level ERROR and error boom", line)
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("messages = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOddKeysAndValues(t *testing.T) {
	logger, read := newFileLogger(t, "info")
	logger.Info("odd", "complete", 1, 42, "non-string key", "dangling")
	line := read()[0]
	if line["complete"] != float64(1) || line["42"] != "non-string key" || line["dangling"] != "(MISSING)" {
		t.Errorf("line = %v", line)
	}
}

func TestHelperCallDepth(t *testing.T) {
	logger, read := newFileLogger(t, "info")
	helper := func(l logr.Logger) { l.WithCallDepth(1).Info("from helper") }
	helper(logger)
	if caller, _ := read()[0]["caller"].(string); !strings.HasPrefix(caller, "logging/logging_test.go:") {
		t.Errorf("caller = %q, want this test file", caller)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  logging.Config
		want string
	}{
		{"unknown level", logging.Config{Level: "verbose"}, `"verbose"`},
		{"unopenable output", logging.Config{OutputPaths: []string{filepath.Join(t.TempDir(), "missing", "dir", "x.log")}}, "output paths"},
		{"unopenable error output", logging.Config{ErrorOutputPaths: []string{filepath.Join(t.TempDir(), "missing", "x.log")}}, "error output paths"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := logging.New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New() error = %v, want it to mention %s", err, tt.want)
			}
		})
	}
}

func TestDefaultsToStdout(t *testing.T) {
	logger, flush, err := logging.New(logging.Config{})
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	if !logger.Enabled() || logger.V(1).Enabled() {
		t.Errorf("default level should be info")
	}
	if err := flush(); err != nil {
		t.Errorf("flush() error = %v", err)
	}
}
