package simulate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-autoscaler/lathe/cmd/lathe/simulate"
)

// defaultPool is a NodePool of the c, m and r families on the EC2NodeClass "default".
const defaultPool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
`

const manifests = defaultPool + `---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec: {amiSelectorTerms: [{alias: al2023@latest}], role: KarpenterNodeRole}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: inflate}
spec:
  replicas: 3
  selector: {matchLabels: {app: inflate}}
  template:
    metadata: {labels: {app: inflate}}
    spec:
      containers:
      - name: app
        image: pause
        resources: {requests: {cpu: "1", memory: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: picky}
spec:
  nodeSelector: {team: blue}
  containers: [{name: app, image: pause}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: logging}
spec:
  selector: {matchLabels: {app: logging}}
  template:
    metadata: {labels: {app: logging}}
    spec:
      containers: [{name: agent, image: agent, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
`

type result struct {
	TotalPricePerHour float64 `json:"totalPricePerHour"`
	LowerBoundPerHour float64 `json:"lowerBoundPerHour"`
	NodeClaims        []struct {
		InstanceTypes []string `json:"instanceTypes"`
		Zone          string   `json:"zone"`
		CapacityType  string   `json:"capacityType"`
		PricePerHour  float64  `json:"pricePerHour"`
		Pods          []string `json:"pods"`
	} `json:"nodeClaims"`
	Unschedulable []struct {
		Pod     string   `json:"pod"`
		Reasons []string `json:"reasons"`
	} `json:"unschedulable"`
}

func run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := simulate.Run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func TestJSON(t *testing.T) {
	out, stderr, err := run(t, manifests, "-f", "-", "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var res result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	placed := 0
	for _, nc := range res.NodeClaims {
		placed += len(nc.Pods)
		if nc.CapacityType != "on-demand" || !strings.HasPrefix(nc.Zone, "us-east-1") || len(nc.InstanceTypes) == 0 || len(nc.InstanceTypes) > 60 {
			t.Errorf("claim %+v", nc)
		}
	}
	if placed != 3 || res.TotalPricePerHour <= 0 || res.LowerBoundPerHour <= 0 || res.LowerBoundPerHour > res.TotalPricePerHour {
		t.Errorf("placed %d, price %v, bound %v", placed, res.TotalPricePerHour, res.LowerBoundPerHour)
	}
	if len(res.Unschedulable) != 1 || res.Unschedulable[0].Pod != "default/picky" {
		t.Fatalf("unschedulable %+v", res.Unschedulable)
	}
	reasons := strings.Join(res.Unschedulable[0].Reasons, "\n")
	for _, want := range []string{`nodepool default: incompatible requirements, label "team" does not have known values`, "nodepool gpu: taint nvidia.com/gpu:NoSchedule not tolerated"} {
		if !strings.Contains(reasons, want) {
			t.Errorf("reasons %q lack %q", reasons, want)
		}
	}
}

func TestTableAndCatalogFile(t *testing.T) {
	dir := t.TempDir()
	workload := filepath.Join(dir, "workload.yaml")
	catalogFile := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(workload, []byte(manifests), 0o600); err != nil {
		t.Fatal(err)
	}
	catalog := `instanceTypes:
- name: small
  capacity: {cpu: "4", memory: 8Gi, pods: "20"}
  labels: {kubernetes.io/arch: amd64, kubernetes.io/os: linux, karpenter.k8s.aws/instance-category: m}
  offerings: [{zone: z1, capacityType: on-demand, price: 0.2}]
`
	if err := os.WriteFile(catalogFile, []byte(catalog), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "", "-f", workload, "--catalog", catalogFile)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"NODECLAIM", "small", "z1", "0.2000", "Unschedulable pods (1)", "default/picky", "Total: 1 nodeclaim, $0.2000/h"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"-f", "x", "-o", "yaml"}, {"--nope"}, {"-f", "x", "--preference-policy", "Sometimes"}} {
		if _, _, err := run(t, "", args...); !errors.Is(err, simulate.ErrUsage) {
			t.Errorf("%v: error %v, want ErrUsage", args, err)
		}
	}
	if _, _, err := run(t, "", "-f", "/does/not/exist"); err == nil || errors.Is(err, simulate.ErrUsage) {
		t.Errorf("missing file: %v", err)
	}
	if _, _, err := run(t, "kind: [", "-f", "-"); err == nil {
		t.Error("bad yaml accepted")
	}
}

// The pool's EC2NodeClass shapes the embedded catalog: with kubelet maxPods 10, 40 tiny pods need at least
// four nodes, where the catalog's own pod limits would put them on one.
func TestNodeClassKubeletShapesTheCatalog(t *testing.T) {
	const pool = defaultPool + `---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole
  kubelet: {maxPods: MAXPODS}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: tiny}
spec:
  replicas: 40
  selector: {matchLabels: {app: tiny}}
  template:
    metadata: {labels: {app: tiny}}
    spec:
      containers: [{name: app, image: pause, resources: {requests: {cpu: 10m, memory: 16Mi}}}]
`
	nodes := func(maxPods string) int {
		out, stderr, err := run(t, strings.Replace(pool, "MAXPODS", maxPods, 1), "-f", "-", "-o", "json")
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		var res result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return len(res.NodeClaims)
	}
	if n := nodes("10"); n < 4 {
		t.Errorf("maxPods 10: %d nodeclaims for 40 pods, want at least 4", n)
	}
	if n := nodes("110"); n != 1 {
		t.Errorf("maxPods 110: %d nodeclaims for 40 tiny pods, want 1", n)
	}
}

// A pod selecting a well-known AWS label the tutorial NodePool doesn't mention gets a node of that family.
func TestWellKnownProviderLabel(t *testing.T) {
	tutorial, err := os.ReadFile("../../../examples/tutorial-nodepool.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const pod = `
---
apiVersion: v1
kind: Pod
metadata: {name: compute}
spec:
  nodeSelector: {karpenter.k8s.aws/instance-family: c6a}
  containers: [{name: app, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}]
`
	out, stderr, err := run(t, string(tutorial)+pod, "-f", "-", "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var res result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.Unschedulable) != 0 || len(res.NodeClaims) != 1 {
		t.Fatalf("want one claim, got %+v, unschedulable %+v", res.NodeClaims, res.Unschedulable)
	}
	for _, name := range res.NodeClaims[0].InstanceTypes {
		if !strings.HasPrefix(name, "c6a.") {
			t.Errorf("instance type %s is not a c6a", name)
		}
	}
}

// countingWriter counts the Write calls that reach it (system calls, for os.Stdout).
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// TestOutputBuffered: the table (written cell by cell) reaches stdout in a few writes, not one per cell.
func TestOutputBuffered(t *testing.T) {
	dir := t.TempDir()
	workload := filepath.Join(dir, "workload.yaml")
	if err := os.WriteFile(workload, []byte(manifests), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"table", "json"} {
		var stdout countingWriter
		var stderr bytes.Buffer
		if err := simulate.Run(context.Background(), []string{"-f", workload, "-o", format}, nil, &stdout, &stderr); err != nil {
			t.Fatalf("%s: %v\n%s", format, err, stderr.String())
		}
		if limit := 1 + stdout.Len()/4096; stdout.writes > limit {
			t.Errorf("%s: %d writes for %d bytes, want at most %d", format, stdout.writes, stdout.Len(), limit)
		}
	}
}
