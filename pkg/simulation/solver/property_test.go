package solver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/checker"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// randomInput draws a workload exercising every constraint the solver honours.
func randomInput(rng *rand.Rand) solver.Input {
	pick := func(options ...string) string { return options[rng.Intn(len(options))] }
	var pools []*v1.NodePool
	for i := range 1 + rng.Intn(3) {
		np := nodePool(fmt.Sprintf("pool-%d", i))
		if rng.Intn(3) == 0 {
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: pick("a", "b"), Effect: corev1.TaintEffectNoSchedule}}
		}
		if rng.Intn(3) == 0 {
			np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{pick(testZones()...), pick(testZones()...)}}}
		}
		if rng.Intn(3) == 0 {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pick(v1.CapacityTypeSpot, v1.CapacityTypeOnDemand)}})
		}
		if rng.Intn(4) == 0 {
			minValues := 2 + rng.Intn(3)
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
				Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpExists, MinValues: &minValues})
		}
		if rng.Intn(3) == 0 {
			np.Spec.Limits = v1.Limits{corev1.ResourceCPU: *resource.NewQuantity(int64(8+rng.Intn(64)), resource.DecimalSI)}
		}
		if rng.Intn(2) == 0 {
			w := int32(rng.Intn(3))
			np.Spec.Weight = &w
		}
		pools = append(pools, np)
	}
	var ps []*corev1.Pod
	for i := range 1 + rng.Intn(60) {
		app := pick("web", "db", "cache")
		p := pod(fmt.Sprintf("p-%d", i), pick("100m", "500m", "1", "3", "7"), pick("100Mi", "1Gi", "3Gi", "9Gi"), withLabels(map[string]string{"app": app}))
		selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": pick("web", "db", "cache")}}
		switch rng.Intn(12) {
		case 0:
			p.Spec.NodeSelector = map[string]string{v1.LabelTopologyZone: pick(testZones()...)}
		case 1:
			p.Spec.NodeSelector = map[string]string{v1.LabelArch: pick("amd64", "arm64")}
		case 2:
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		case 3:
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: int32(1 + rng.Intn(2)), TopologyKey: pick(v1.LabelTopologyZone, v1.LabelHostname),
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selector}}
		case 4:
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: pick(v1.LabelHostname, v1.LabelTopologyZone), LabelSelector: selector}}}}
		case 5:
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: pick(v1.LabelHostname, v1.LabelTopologyZone), LabelSelector: selector}}}}
		case 6:
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: int32(8080 + rng.Intn(2))}}
		case 7:
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 5, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: v1.LabelTopologyZone, LabelSelector: selector}}}}}
		case 8:
			requireTerms(zoneIn(pick("nowhere", testZones()[0])), zoneIn(pick(testZones()...)))(p)
		case 9:
			p.Spec.NodeSelector = map[string]string{"karpenter.k8s.aws/instance-family": pick("c-2", "c-8", "arm-4")}
		}
		ps = append(ps, p)
	}
	// Pods no other pod selects and with no constraints of their own: free to be repacked.
	if rng.Intn(3) == 0 {
		size := pick("100m", "250m", "1")
		for i := range 10 + rng.Intn(50) {
			ps = append(ps, pod(fmt.Sprintf("batch-%d", i), size, pick("100Mi", "1Gi"), withLabels(map[string]string{"app": "batch"})))
		}
	}
	in := input(ps, pools...)
	if rng.Intn(3) == 0 {
		in.DaemonSets = append(in.DaemonSets, daemonSet(pick("100m", "300m")))
	}
	if rng.Intn(3) == 0 { // a DaemonSet on some types only, maybe holding a port pods use
		var ports []int32
		if rng.Intn(2) == 0 {
			ports = append(ports, 8080)
		}
		in.DaemonSets = append(in.DaemonSets, selectingDaemonSet("some", pick("200m", "1"), v1.LabelInstanceType, []string{pick("c-2", "c-4", "arm-4"), pick("c-8", "c-16")}, ports...))
	}
	if rng.Intn(3) == 0 {
		zone := pick(testZones()...)
		in.Nodes = append(in.Nodes, solver.ExistingNode{Node: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "existing", Labels: map[string]string{v1.LabelHostname: "existing", v1.LabelTopologyZone: zone, v1.LabelArch: "amd64"}},
			Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("20")}},
		}, Pods: []*corev1.Pod{pod("bound", "1", "1Gi", withLabels(map[string]string{"app": "web"}))}})
	}
	return in
}

// withEarlierPlaces gives, half the time, some pods the existing node as the place an earlier pass put them.
func withEarlierPlaces(rng *rand.Rand, in *solver.Input) {
	if len(in.Nodes) == 0 || rng.Intn(2) == 0 {
		return
	}
	in.EarlierPlaces = map[solver.PodRef]string{}
	for _, p := range in.Pods {
		if rng.Intn(3) == 0 {
			in.EarlierPlaces[solver.PodRef{Namespace: p.Namespace, Name: p.Name}] = in.Nodes[0].Node.Name
		}
	}
}

func checkRandom(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	in := randomInput(rng)
	withEarlierPlaces(rng, &in)
	for i, policy := range []solver.PreferencePolicy{solver.PreferenceRespect, solver.PreferenceIgnore} {
		opts := solver.Options{PreferencePolicy: policy, MaxInstanceTypes: 3 + int(seed%5)}
		if i == 1 {
			opts.MinValuesPolicy = scheduling.MinValuesBestEffort
		}
		plan, err := solver.Solve(context.Background(), in, opts)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := checker.Check(in, plan, checker.Options{MaxInstanceTypes: opts.MaxInstanceTypes}); err != nil {
			t.Fatalf("seed %d, %s: checker rejected the plan:\n%v", seed, policy, err)
		}
		again, _ := solver.Solve(context.Background(), in, opts)
		a, _ := json.Marshal(plan)
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: two solves differ", seed)
		}
		if plan.LowerBoundPerHour > plan.MixLowerBoundPerHour+1e-9 || plan.MixLowerBoundPerHour > plan.PricePerHour+1e-9 {
			t.Fatalf("seed %d: bounds %.4f, %.4f not below price %.4f", seed, plan.LowerBoundPerHour, plan.MixLowerBoundPerHour, plan.PricePerHour)
		}
	}
}

func TestRandomWorkloads(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		checkRandom(t, seed)
	}
}

func FuzzSolve(f *testing.F) {
	for seed := int64(0); seed < 5; seed++ {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed int64) { checkRandom(t, seed) })
}
