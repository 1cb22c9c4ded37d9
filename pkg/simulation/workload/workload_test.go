package workload_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/workload"
)

func TestDiverseShape(t *testing.T) {
	pods := workload.Diverse(103) // k = 20, plus 3 extra generic pods
	if len(pods) != 103 {
		t.Fatalf("got %d pods", len(pods))
	}
	count := func(match func(*corev1.Pod) bool) int {
		n := 0
		for _, p := range pods {
			if match(p) {
				n++
			}
		}
		return n
	}
	spreads := func(key string) func(*corev1.Pod) bool {
		return func(p *corev1.Pod) bool {
			return len(p.Spec.TopologySpreadConstraints) == 1 && p.Spec.TopologySpreadConstraints[0].TopologyKey == key
		}
	}
	if n := count(spreads(v1.LabelTopologyZone)); n != 20 {
		t.Errorf("zone spread pods %d", n)
	}
	if n := count(spreads(v1.LabelHostname)); n != 20 {
		t.Errorf("hostname spread pods %d", n)
	}
	if n := count(func(p *corev1.Pod) bool { return p.Labels["app"] == "nginx" }); n != 20 {
		t.Errorf("anti-affinity pods %d", n)
	}
	if n := count(func(p *corev1.Pod) bool { _, ok := p.Labels["my-affininity"]; return ok }); n != 20 {
		t.Errorf("affinity pods %d", n)
	}
	if n := count(func(p *corev1.Pod) bool { return p.Spec.Affinity == nil && len(p.Spec.TopologySpreadConstraints) == 0 }); n != 23 {
		t.Errorf("generic pods %d", n)
	}
	// Same seed, same workload.
	again := workload.Diverse(103)
	for i := range pods {
		if pods[i].Name != again[i].Name || pods[i].Labels["my-label"] != again[i].Labels["my-label"] ||
			!pods[i].Spec.Containers[0].Resources.Requests.Cpu().Equal(*again[i].Spec.Containers[0].Resources.Requests.Cpu()) {
			t.Fatalf("pod %d differs between runs", i)
		}
	}
}

func TestPreferenceIdentical(t *testing.T) {
	pods := workload.Preference(10)
	first := pods[0].Spec.Containers[0].Resources.Requests
	for _, p := range pods {
		if !p.Spec.Containers[0].Resources.Requests.Cpu().Equal(*first.Cpu()) || p.Spec.Affinity.PodAntiAffinity == nil {
			t.Fatalf("pod %s differs", p.Name)
		}
	}
}

func TestGPUShape(t *testing.T) {
	pods := workload.GPU(1000)
	if len(pods) != 1000 {
		t.Fatalf("got %d pods", len(pods))
	}
	withGPU := 0
	for _, p := range pods {
		req := p.Spec.Containers[0].Resources.Requests
		gpus, cpu, mem := req[workload.ResourceNvidiaGPU], req[corev1.ResourceCPU], req[corev1.ResourceMemory]
		if g := gpus.Value(); g < 0 || g > 8 {
			t.Fatalf("%s requests %d GPUs", p.Name, g)
		} else if g > 0 {
			withGPU++
		}
		if c := cpu.Value(); c < 1 || c > 64 {
			t.Fatalf("%s requests %d cpu", p.Name, c)
		}
		if m := mem.Value() >> 30; m < 1 || m > 512 {
			t.Fatalf("%s requests %d GiB", p.Name, m)
		}
	}
	if withGPU < 700 || withGPU > 900 {
		t.Fatalf("%d of 1000 pods request GPUs, want about 800", withGPU)
	}
	again := workload.GPU(1000)
	for i := range pods {
		if pods[i].Name != again[i].Name || !equalRequests(pods[i], again[i]) {
			t.Fatalf("pod %d differs between two calls", i)
		}
	}
}

func equalRequests(a, b *corev1.Pod) bool {
	ra, rb := a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests
	if len(ra) != len(rb) {
		return false
	}
	for n, q := range ra {
		if q.Cmp(rb[n]) != 0 {
			return false
		}
	}
	return true
}
