package solver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/workload"
)

func TestUnschedulableReasons(t *testing.T) {
	gpuTaint := func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}}
	}
	cases := []struct {
		name  string
		in    solver.Input
		wants []string
	}{
		{"taint", input([]*corev1.Pod{pod("p", "1", "1Gi")}, nodePool("gpu", gpuTaint)),
			[]string{"nodepool gpu: taint nvidia.com/gpu:NoSchedule not tolerated"}},
		{"too big after daemonsets", func() solver.Input {
			in := input([]*corev1.Pod{pod("p", "96", "1Gi")}, nodePool("default"))
			in.DaemonSets = append(in.DaemonSets, daemonSet("1200m"))
			return in
		}(), []string{"nodepool default: needs 97.2 cpu after 1.2 cpu daemonset overhead, largest allowed type has 63.9 cpu"}},
		{"limit", func() solver.Input {
			np := nodePool("spot", func(np *v1.NodePool) {
				np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("10")}
			})
			in := input([]*corev1.Pod{pod("p", "3", "1Gi")}, np)
			in.Nodes = []solver.ExistingNode{{Node: &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{v1.NodePoolLabelKey: "spot"}},
				Status:     corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}},
			}}}
			return in
		}(), []string{"nodepool spot: limit cpu 10 reached (8 in use)"}},
		{"existing nodes", func() solver.Input {
			in := input([]*corev1.Pod{pod("p", "3", "1Gi")}, nodePool("gpu", gpuTaint))
			small := func(name string, cordoned bool) solver.ExistingNode {
				return solver.ExistingNode{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: cordoned},
					Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("9")}}}}
			}
			in.Nodes = []solver.ExistingNode{small("a", false), small("b", false), small("c", true)}
			return in
		}(), []string{"existing nodes: 2 insufficient cpu, 1 cordoned or being deleted", "nodepool gpu: taint"}},
		{"node selector", input([]*corev1.Pod{pod("p", "1", "1Gi", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"team": "a"}
		})}, nodePool("default")), []string{`nodepool default: incompatible requirements, label "team" does not have known values`}},
		{"arch", input([]*corev1.Pod{pod("p", "8", "1Gi", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{v1.LabelArch: "arm64"}
		})}, nodePool("default")), []string{"nodepool default: needs 8 cpu, largest allowed type has 3.9 cpu"}},
		{"opt out", input([]*corev1.Pod{pod("p", "1", "1Gi", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpDoesNotExist}}}}}}}
		})}, nodePool("default")), []string{`nodepool default: incompatible requirements, key "karpenter.sh/nodepool"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := solveChecked(t, tc.in, solver.Options{})
			got := reasonsOf(plan)
			for _, want := range tc.wants {
				if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, want) }) {
					t.Errorf("reasons %q lack %q", got, want)
				}
			}
			if len(plan.NodeClaims) != 0 {
				t.Errorf("unexpected claims %v", plan.NodeClaims)
			}
		})
	}
}

func TestPacksCheapestFirst(t *testing.T) {
	// Ten 1-cpu pods: three c-4 (3.9 allocatable cpu) and one c-2 on spot cost 0.28/h, less than one c-16
	// (0.32/h) because every node keeps 100m back.
	plan := solveChecked(t, input(pods(10, "p", "1", "1Gi"), nodePool("default")), solver.Options{})
	if got := plan.PricePerHour; got > 0.28+1e-9 {
		t.Errorf("price %.4f, want at most 0.28", got)
	}
	for _, nc := range plan.NodeClaims {
		if nc.CapacityType != v1.CapacityTypeSpot || nc.InstanceTypeNames[0] != nc.InstanceTypes[0].Name {
			t.Errorf("claim %s %v %s", nc.Name, nc.InstanceTypeNames, nc.CapacityType)
		}
	}
	if plan.CostRatio() < 1 || plan.CostRatio() > 1.5 {
		t.Errorf("cost ratio %.3f", plan.CostRatio())
	}
}

func TestMaxInstanceTypes(t *testing.T) {
	plan := solveChecked(t, input(pods(1, "p", "1", "1Gi"), nodePool("default")), solver.Options{MaxInstanceTypes: 2})
	if got := plan.NodeClaims[0].InstanceTypeNames; len(got) != 2 || got[0] != "c-2" || got[1] != "arm-4" && got[1] != "c-4" {
		t.Errorf("instance types %v", got)
	}
}

func TestExistingAndInFlightCapacityFirst(t *testing.T) {
	in := input(pods(3, "p", "1", "1Gi"), nodePool("default"))
	in.Nodes = []solver.ExistingNode{{Node: &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "existing", Labels: map[string]string{v1.LabelHostname: "existing"}},
		Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("10")}},
	}}}
	in.InFlight = []solver.InFlightNodeClaim{{NodeClaim: &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "flying", Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
		Status:     v1.NodeClaimStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("10")}},
	}}}
	plan := solveChecked(t, in, solver.Options{})
	if len(plan.Placements) != 2 || len(plan.NodeClaims) != 1 {
		t.Fatalf("placements %v, claims %d", plan.Placements, len(plan.NodeClaims))
	}
	if plan.Placements[0].Target != "existing" || plan.Placements[1].Target != "flying" || !plan.Placements[1].InFlight {
		t.Errorf("placements %+v", plan.Placements)
	}
}

func TestNodePoolWeight(t *testing.T) {
	heavy := nodePool("b-heavy", func(np *v1.NodePool) { w := int32(10); np.Spec.Weight = &w })
	plan := solveChecked(t, input(pods(1, "p", "1", "1Gi"), nodePool("a-light"), nodePool("z-light"), heavy), solver.Options{})
	if plan.NodeClaims[0].NodePool != "b-heavy" {
		t.Errorf("chose %s, want the heaviest pool", plan.NodeClaims[0].NodePool)
	}
	plan = solveChecked(t, input(pods(1, "p", "1", "1Gi"), nodePool("a-light"), nodePool("z-light")), solver.Options{})
	if plan.NodeClaims[0].NodePool != "z-light" {
		t.Errorf("chose %s, want ties to the later name", plan.NodeClaims[0].NodePool)
	}
}

func TestDaemonSetOverhead(t *testing.T) {
	in := input(pods(1, "p", "1800m", "1Gi"), nodePool("default"))
	in.DaemonSets = append(in.DaemonSets, daemonSet("500m"))
	plan := solveChecked(t, in, solver.Options{})
	if got := plan.NodeClaims[0].InstanceTypeNames[0]; got != "c-4" {
		t.Errorf("type %s, want c-4 (1.8 + 0.5 daemonset cpu doesn't fit 1.9)", got)
	}
}

func TestHostPorts(t *testing.T) {
	withPort := func(p *corev1.Pod) { p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 8080}} }
	plan := solveChecked(t, input(pods(3, "p", "100m", "100Mi", withPort), nodePool("default")), solver.Options{})
	if len(plan.NodeClaims) != 3 {
		t.Errorf("got %d claims, want 3 (one per host port user)", len(plan.NodeClaims))
	}
}

func TestTopology(t *testing.T) {
	spread := func(key string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "web"}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: key,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
		}
	}
	term := func(key string) corev1.PodAffinityTerm {
		return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	}
	anti := func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(v1.LabelHostname)}}}
	}
	affinity := func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(v1.LabelTopologyZone)}}}
	}
	cases := []struct {
		name        string
		pods        []*corev1.Pod
		claims      int
		zones       int
		unscheduled int
	}{
		{"zone spread", pods(6, "p", "1", "1Gi", spread(v1.LabelTopologyZone)), 3, 3, 0},
		{"hostname spread", pods(4, "p", "100m", "100Mi", spread(v1.LabelHostname)), 4, 0, 0},
		{"hostname anti-affinity", pods(4, "p", "100m", "100Mi", anti), 4, 0, 0},
		{"zone affinity", pods(5, "p", "8", "1Gi", affinity), 0, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := solveChecked(t, input(tc.pods, nodePool("default")), solver.Options{})
			if tc.claims > 0 && len(plan.NodeClaims) != tc.claims {
				t.Errorf("got %d claims, want %d", len(plan.NodeClaims), tc.claims)
			}
			seen := map[string]bool{}
			for _, nc := range plan.NodeClaims {
				seen[nc.Zone] = true
			}
			if tc.zones > 0 && len(seen) != tc.zones {
				t.Errorf("claims in zones %v, want %d zones", seen, tc.zones)
			}
			if len(plan.Unschedulable) != tc.unscheduled {
				t.Errorf("unschedulable %v", plan.Unschedulable)
			}
		})
	}
}

func TestPreferences(t *testing.T) {
	prefer := func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Spec.Affinity = &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-b"}}}}}}},
			PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{
				TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}},
		}
	}
	respected := solveChecked(t, input(pods(3, "p", "100m", "100Mi", prefer), nodePool("default")), solver.Options{})
	if len(respected.NodeClaims) != 3 || respected.NodeClaims[0].Zone != "zone-b" {
		t.Errorf("respect: %d claims, first in %s", len(respected.NodeClaims), respected.NodeClaims[0].Zone)
	}
	ignored := solveChecked(t, input(pods(3, "p", "100m", "100Mi", prefer), nodePool("default")), solver.Options{PreferencePolicy: solver.PreferenceIgnore})
	if len(ignored.NodeClaims) != 1 {
		t.Errorf("ignore: %d claims, want 1", len(ignored.NodeClaims))
	}
}

func TestVolumeZone(t *testing.T) {
	p := pod("p", "1", "1Gi", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	})
	in := input([]*corev1.Pod{p}, nodePool("default"))
	in.Volumes.Claims = []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv"}}}
	in.Volumes.Volumes = []*corev1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-c"}}}}}}}}}}
	plan := solveChecked(t, in, solver.Options{})
	if plan.NodeClaims[0].Zone != "zone-c" {
		t.Errorf("zone %s, want the volume's zone-c", plan.NodeClaims[0].Zone)
	}
}

func TestMinValues(t *testing.T) {
	three := 3
	np := nodePool("default", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpExists, MinValues: &three}}
	})
	big := pods(1, "p", "20", "1Gi") // only c-32 and c-64 fit: two families
	strict := solveChecked(t, input(big, np), solver.Options{})
	if len(strict.Unschedulable) != 1 || !strings.Contains(reasonsOf(strict)[0], "minValues") {
		t.Errorf("strict: %v", reasonsOf(strict))
	}
	relaxed := solveChecked(t, input(big, np), solver.Options{MinValuesPolicy: scheduling.MinValuesBestEffort})
	if len(relaxed.NodeClaims) != 1 || !relaxed.NodeClaims[0].MinValuesRelaxed {
		t.Errorf("best effort: %+v", relaxed.NodeClaims)
	}
	small := solveChecked(t, input(pods(1, "p", "1", "1Gi"), np), solver.Options{MaxInstanceTypes: 3})
	if got := small.NodeClaims[0].InstanceTypeNames; len(got) != 3 {
		t.Errorf("types %v", got)
	}
}

func TestDeterministic(t *testing.T) {
	in := benchmarkInput(500)
	var first []byte
	for i := 0; i < 3; i++ {
		plan, err := solver.Solve(context.Background(), in, solver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(plan)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = out
		} else if !bytes.Equal(first, out) {
			t.Fatalf("run %d produced a different plan", i)
		}
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := solver.Solve(ctx, benchmarkInput(10), solver.Options{}); err == nil {
		t.Error("want an error for a cancelled context")
	}
}

func TestPreferenceWorkload(t *testing.T) {
	in := benchmarkInput(0)
	in.Pods = workload.Preference(200)
	plan := solveChecked(t, in, solver.Options{})
	if len(plan.Unschedulable) != 0 {
		t.Fatalf("%d unschedulable: %v", len(plan.Unschedulable), reasonsOf(plan)[:1])
	}
	if plan.NodeClaims[0].Zone != "test-zone-1" {
		t.Errorf("first claim in %s, want the preferred test-zone-1", plan.NodeClaims[0].Zone)
	}
}
