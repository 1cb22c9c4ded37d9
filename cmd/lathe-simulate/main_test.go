package main_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-autoscaler/lathe/cmd/lathe/simulate"
)

// TestLinksNoOperator keeps the binary lean: none of the operator's packages or their heavy dependencies.
func TestLinksNoOperator(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list, %v", err)
	}
	forbidden := []string{
		"sigs.k8s.io/controller-runtime", "k8s.io/client-go", "github.com/prometheus/",
		"github.com/lathe-autoscaler/lathe/pkg/operator", "github.com/lathe-autoscaler/lathe/pkg/controllers",
		"github.com/lathe-autoscaler/lathe/pkg/state", "github.com/lathe-autoscaler/lathe/pkg/providers",
	}
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("lathe-simulate depends on %s", dep)
			}
		}
	}
	if len(deps) == 0 {
		t.Fatal("go list printed no dependencies")
	}
}

const manifests = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: app, image: pause, resources: {requests: {cpu: "3", memory: 2Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: picky}
spec:
  nodeSelector: {team: blue}
  containers: [{name: app, image: pause}]
`

// TestRunsTheCommand compares the built binary with `lathe simulate` in process: output and exit code, on a
// plan, on -h and on bad arguments.
func TestRunsTheCommand(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "lathe-simulate")
	// go test puts $GOROOT/bin first on PATH, so this is the toolchain running the tests.
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		t.Fatalf("building lathe-simulate, %v\n%s", err, out)
	}
	input := filepath.Join(dir, "input.yaml")
	if err := os.WriteFile(input, []byte(manifests), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-f", input}, {"-f", input, "-o", "json"}, {"-f", "-", "-o", "json"}, {"-h"}, {"-o", "yaml"}, {"-f", filepath.Join(dir, "missing.yaml")}} {
		var wantOut, wantErr bytes.Buffer
		wantCode := simulate.Main(args, strings.NewReader(manifests), &wantOut, &wantErr)
		cmd := exec.Command(binary, args...)
		cmd.Stdin = strings.NewReader(manifests)
		var gotOut, gotErr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &gotOut, &gotErr
		code := 0
		if err := cmd.Run(); err != nil {
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("%v: running, %v", args, err)
			}
			code = exit.ExitCode()
		}
		if code != wantCode || gotOut.String() != wantOut.String() || gotErr.String() != wantErr.String() {
			t.Errorf("%v: exit %d, stdout\n%s\nstderr\n%s\nwant exit %d, stdout\n%s\nstderr\n%s", args, code, &gotOut, &gotErr, wantCode, &wantOut, &wantErr)
		}
		if len(args) == 2 && args[1] == input && (code != 0 || !strings.Contains(gotOut.String(), "picky")) {
			t.Errorf("%v: exit %d, want a plan naming the unplaced pod picky:\n%s%s", args, code, &gotOut, &gotErr)
		}
	}
}
