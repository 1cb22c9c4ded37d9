package simulate_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/lathe-autoscaler/lathe/cmd/lathe/simulate"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/workload"
)

// allFamiliesPool is a NodePool without requirements: every family of the embedded catalog.
const allFamiliesPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`

// writeGPUManifests writes workload.GPU(n) as one YAML file of Pod documents, and the NodePool, into dir.
func writeGPUManifests(tb testing.TB, dir string, n int) (pods, pool string) {
	tb.Helper()
	var buf bytes.Buffer
	for _, p := range workload.GPU(n) {
		p.TypeMeta.APIVersion, p.TypeMeta.Kind = "v1", "Pod"
		out, err := yaml.Marshal(struct {
			*corev1.Pod `json:",inline"`
		}{p})
		if err != nil {
			tb.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(out)
	}
	pods, pool = filepath.Join(dir, "pods.yaml"), filepath.Join(dir, "nodepool.yaml")
	if err := os.WriteFile(pods, buf.Bytes(), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(pool, []byte(allFamiliesPool), 0o600); err != nil {
		tb.Fatal(err)
	}
	return pods, pool
}

// BenchmarkSimulateGPU is `lathe simulate -f pods.yaml -f nodepool.yaml -o json` on workload.GPU(1000):
// reading and decoding the YAML, loading the embedded EC2 catalog, solving and writing the plan.
func BenchmarkSimulateGPU(b *testing.B) {
	pods, pool := writeGPUManifests(b, b.TempDir(), 1000)
	b.ReportAllocs()
	b.ResetTimer()
	start, startCPU := time.Now(), processCPU(b)
	for range b.N {
		if err := simulate.Run(context.Background(), []string{"-f", pods, "-f", pool, "-o", "json"}, nil, io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(1000*b.N)/time.Since(start).Seconds(), "pods/s")
	b.ReportMetric(float64((processCPU(b)-startCPU).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// processCPU is the CPU time (user and system) the process has used: steadier than wall time on a machine
// shared with other work.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
