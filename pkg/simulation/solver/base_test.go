package solver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// randomCluster is existing nodes (some in a NodePool, some cordoned, some with host ports in use) and
// maybe an in-flight claim, with the pods bound to them, and a few pending pods; no topology constraints,
// so that a Base reuses its preparation.
func randomCluster(rng *rand.Rand) solver.Input {
	pick := func(options ...string) string { return options[rng.Intn(len(options))] }
	np := nodePool("pool")
	if rng.Intn(2) == 0 {
		np.Spec.Limits = v1.Limits{corev1.ResourceCPU: *resource.NewQuantity(int64(40+rng.Intn(80)), resource.DecimalSI)}
	}
	var pending []*corev1.Pod
	for i := range rng.Intn(4) {
		pending = append(pending, pod(fmt.Sprintf("pending-%d", i), pick("250m", "1", "3"), pick("1Gi", "3Gi")))
	}
	in := input(pending, np)
	for i := range 2 + rng.Intn(10) {
		name := fmt.Sprintf("node-%02d", rng.Intn(100)*100+i)
		cpu := pick("4", "8", "16")
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name,
				v1.LabelTopologyZone: pick(testZones()...), v1.LabelArch: "amd64", v1.NodePoolLabelKey: pick("pool", "other")}},
			Spec: corev1.NodeSpec{Unschedulable: rng.Intn(6) == 0},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("20")},
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("16Gi")},
			},
		}
		var bound []*corev1.Pod
		for j := range rng.Intn(5) {
			p := pod(fmt.Sprintf("%s-p%d", name, j), pick("250m", "500m", "1", "2"), pick("512Mi", "2Gi"))
			if rng.Intn(8) == 0 {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 8080}}
			}
			bound = append(bound, p)
		}
		in.Nodes = append(in.Nodes, solver.ExistingNode{Node: node, Pods: bound})
	}
	if rng.Intn(2) == 0 {
		claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "inflight", Labels: map[string]string{v1.NodePoolLabelKey: "pool", v1.LabelTopologyZone: "zone-a"}},
			Status: v1.NodeClaimStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}}
		in.InFlight = append(in.InFlight, solver.InFlightNodeClaim{NodeClaim: claim, Pods: []*corev1.Pod{pod("nominated", "1", "1Gi")}})
	}
	return in
}

// checkVariants solves random variants of in (some existing nodes gone, their pods and some of in.Pods
// to place) through a Base and from scratch, and requires identical plans.
func checkVariants(t *testing.T, seed int64, in solver.Input, base *solver.Base, rng *rand.Rand) {
	t.Helper()
	for range 4 {
		var without []string
		var ps []*corev1.Pod
		variant := in
		variant.Nodes = nil
		for _, n := range in.Nodes {
			if rng.Intn(2) == 0 {
				without = append(without, n.Node.Name)
				ps = append(ps, n.Pods...)
				continue
			}
			variant.Nodes = append(variant.Nodes, n)
		}
		for _, p := range in.Pods {
			if rng.Intn(2) == 0 && !slices.Contains(ps, p) {
				ps = append(ps, p)
			}
		}
		variant.Pods = ps
		got, err := base.Solve(context.Background(), without, ps)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		want, err := solver.Solve(context.Background(), variant, solver.Options{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d, without %v: Base.Solve differs from Solve:\n%s\n%s", seed, without, a, b)
		}
	}
}

func TestBaseSolvesLikeSolve(t *testing.T) {
	for seed := int64(0); seed < 150; seed++ {
		rng := rand.New(rand.NewSource(seed))
		in := randomCluster(rng)
		// Every pod a variant may place: the pending ones and those of every node.
		union := in
		union.Pods = slices.Clone(in.Pods)
		for _, n := range in.Nodes {
			union.Pods = append(union.Pods, n.Pods...)
		}
		base := solver.NewBase(union, solver.Options{})
		if !base.Reuses() {
			t.Fatalf("seed %d: a Base without topology constraints or extended resources should reuse its preparation", seed)
		}
		checkVariants(t, seed, in, base, rng)
	}
}

// TestBaseFallsBack covers Inputs with topology constraints, whose variants are solved from scratch.
func TestBaseFallsBack(t *testing.T) {
	reused := 0
	for seed := int64(0); seed < 60; seed++ {
		rng := rand.New(rand.NewSource(seed))
		in := randomInput(rng)
		base := solver.NewBase(in, solver.Options{})
		if base.Reuses() {
			reused++
		}
		checkVariants(t, seed, in, base, rng)
	}
	if reused == 60 {
		t.Fatal("every random workload was reused; the fallback was not exercised")
	}
}

// TestBaseTracksResourcesBeyondTheUsualFour: a Base reads the pods once, assuming they request nothing but
// cpu, memory, pods and ephemeral storage, and must notice when one (bound only, not among the pods to
// place) or a DaemonSet requests a resource an instance type offers: that resource is a dimension of every
// variant, so the Base can't reuse its preparation. A resource no type offers is no dimension, and the
// Base still reuses. Every variant must give Solve's plan.
func TestBaseTracksResourcesBeyondTheUsualFour(t *testing.T) {
	const device = corev1.ResourceName("example.com/device")
	for seed := int64(0); seed < 20; seed++ {
		for _, c := range []struct {
			name           string
			offered, onPod bool
			reuses         bool
		}{
			{name: "bound pod, offered", offered: true, onPod: true, reuses: false},
			{name: "bound pod, not offered", offered: false, onPod: true, reuses: true},
			{name: "daemonset, offered", offered: true, onPod: false, reuses: false},
		} {
			rng := rand.New(rand.NewSource(seed))
			in := randomCluster(rng)
			its := smallCatalog()
			if c.offered {
				withDevice := *its[1]
				withDevice.Capacity = withDevice.Capacity.DeepCopy()
				withDevice.Capacity[device] = resource.MustParse("2")
				its[1] = &withDevice
			}
			in.InstanceTypes["pool"] = its
			last := &in.Nodes[len(in.Nodes)-1]
			if c.onPod {
				p := pod("device-user", "100m", "128Mi")
				p.Spec.Containers[0].Resources.Requests[device] = resource.MustParse("1")
				last.Pods = append(slices.Clone(last.Pods), p)
			} else {
				ds := daemonSet("100m")
				ds.Spec.Template.Spec.Containers[0].Resources.Requests[device] = resource.MustParse("1")
				in.DaemonSets = append(in.DaemonSets, ds)
			}
			// The pods to place: the pending ones and those of every node but the last, whose pods are
			// only bound.
			union := in
			union.Pods = slices.Clone(in.Pods)
			for _, n := range in.Nodes[:len(in.Nodes)-1] {
				union.Pods = append(union.Pods, n.Pods...)
			}
			base := solver.NewBase(union, solver.Options{})
			if base.Reuses() != c.reuses {
				t.Fatalf("seed %d, %s: Reuses %v, want %v", seed, c.name, base.Reuses(), c.reuses)
			}
			checkVariants(t, seed, in, base, rng)
		}
	}
}
