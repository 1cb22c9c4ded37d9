package solver_test

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/checker"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// TestNodeInclusionPolicies checks that a zone spread counts only the pods on nodes its node inclusion
// policies include: three pods matching the spread already sit in zone-a on a node (or in-flight claim) the
// pending pods' node selector or missing toleration excludes. When the policy honours that, those pods
// don't count and the pending pods spread over every zone; when it ignores it, zone-a is already three
// ahead and gets none of them.
func TestNodeInclusionPolicies(t *testing.T) {
	honor, ignore := corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore
	taint := corev1.Taint{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}
	web := map[string]string{"app": "web"}
	spread := func(affinity, taints *corev1.NodeInclusionPolicy, selectArch bool) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Labels = web
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: web},
				NodeAffinityPolicy: affinity, NodeTaintsPolicy: taints}}
			if selectArch {
				p.Spec.NodeSelector = map[string]string{v1.LabelArch: "amd64"}
			}
		}
	}
	boundPods := pods(3, "bound", "100m", "100Mi", withLabels(web))
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("20")}
	existing := func(labels map[string]string, taints []corev1.Taint) func(*solver.Input) {
		return func(in *solver.Input) {
			labels[v1.LabelHostname] = "old-a"
			labels[v1.LabelTopologyZone] = "zone-a"
			in.Nodes = []solver.ExistingNode{{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "old-a", Labels: labels},
				Spec: corev1.NodeSpec{Taints: taints}, Status: corev1.NodeStatus{Allocatable: allocatable}}, Pods: boundPods}}
		}
	}
	inFlight := func(arch string, taints []corev1.Taint) func(*solver.Input) {
		return func(in *solver.Input) {
			in.InFlight = []solver.InFlightNodeClaim{{NodeClaim: &v1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "flying-a", Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
				Spec: v1.NodeClaimSpec{Taints: taints, Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}},
					{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}},
				Status: v1.NodeClaimStatus{Allocatable: allocatable}}, Pods: boundPods}}
		}
	}
	cases := []struct {
		name     string
		pending  func(*corev1.Pod)
		cluster  func(*solver.Input)
		wantInA  int // pending pods placed in zone-a
		wantZone int // zones the pending pods use
	}{
		{"affinity honored by default, existing node", spread(nil, nil, true), existing(map[string]string{v1.LabelArch: "arm64"}, nil), 1, 3},
		{"affinity honored, existing node", spread(&honor, nil, true), existing(map[string]string{v1.LabelArch: "arm64"}, nil), 1, 3},
		{"affinity ignored, existing node", spread(&ignore, nil, true), existing(map[string]string{v1.LabelArch: "arm64"}, nil), 0, 2},
		{"affinity honored, in-flight claim", spread(nil, nil, true), inFlight("arm64", nil), 1, 3},
		{"affinity ignored, in-flight claim", spread(&ignore, nil, true), inFlight("arm64", nil), 0, 2},
		{"taints honored, existing node", spread(nil, &honor, false), existing(map[string]string{}, []corev1.Taint{taint}), 1, 3},
		{"taints ignored by default, existing node", spread(nil, nil, false), existing(map[string]string{}, []corev1.Taint{taint}), 0, 2},
		{"taints ignored, existing node", spread(nil, &ignore, false), existing(map[string]string{}, []corev1.Taint{taint}), 0, 2},
		{"taints honored, in-flight claim", spread(nil, &honor, false), inFlight("amd64", []corev1.Taint{taint}), 1, 3},
		{"taints ignored, in-flight claim", spread(nil, nil, false), inFlight("amd64", []corev1.Taint{taint}), 0, 2},
		{"node included under both policies", spread(&honor, &honor, true), existing(map[string]string{v1.LabelArch: "amd64"}, nil), 0, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input(pods(3, "p", "1", "1Gi", tc.pending), nodePool("default"))
			tc.cluster(&in)
			plan := solveChecked(t, in, solver.Options{})
			if len(plan.Unschedulable) != 0 {
				t.Fatalf("unschedulable: %v", reasonsOf(plan))
			}
			zones := map[string]int{}
			for _, nc := range plan.NodeClaims {
				zones[nc.Zone] += len(nc.Pods)
			}
			for _, pl := range plan.Placements {
				zones[fmt.Sprintf("node %s", pl.Target)]++
			}
			if zones["zone-a"] != tc.wantInA || len(zones) != tc.wantZone {
				t.Errorf("pending pods per zone %v, want %d in zone-a and %d zones", zones, tc.wantInA, tc.wantZone)
			}
			if tc.wantInA == 0 {
				return
			}
			// Under the Ignore policies the excluded node's pods count, and the checker must refuse the plan.
			strict := in
			strict.Pods = nil
			for _, p := range in.Pods {
				p = p.DeepCopy()
				p.Spec.TopologySpreadConstraints[0].NodeAffinityPolicy = &ignore
				p.Spec.TopologySpreadConstraints[0].NodeTaintsPolicy = &ignore
				strict.Pods = append(strict.Pods, p)
			}
			if err := checker.Check(strict, plan, checker.Options{}); err == nil || !strings.Contains(err.Error(), "topology spread") {
				t.Errorf("checker error under Ignore = %v, want a topology spread violation", err)
			}
		})
	}
}

// TestNodeInclusionNewClaims checks the policies against pods on new claims: pods tolerating a tainted
// NodePool fill zone-a first, and a spread honouring taints doesn't count them.
func TestNodeInclusionNewClaims(t *testing.T) {
	honor := corev1.NodeInclusionPolicyHonor
	web := map[string]string{"app": "web"}
	tainted := nodePool("batch", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
	})
	batch := pods(3, "batch", "3", "1Gi", withLabels(web), func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		p.Spec.NodeSelector = map[string]string{v1.LabelTopologyZone: "zone-a", v1.NodePoolLabelKey: "batch"}
	})
	for _, tc := range []struct {
		name    string
		policy  *corev1.NodeInclusionPolicy
		wantInA int
	}{{"honored", &honor, 1}, {"ignored", nil, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			spreading := pods(3, "p", "1", "1Gi", withLabels(web), func(p *corev1.Pod) {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelTopologyZone,
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: web}, NodeTaintsPolicy: tc.policy}}
			})
			in := input(append(batch, spreading...), nodePool("default"), tainted)
			// The larger batch pods go first, so the spreading pods see them.
			plan := solveChecked(t, in, solver.Options{Orders: []solver.Order{solver.OrderCPU}})
			inA := 0
			for _, nc := range plan.NodeClaims {
				if nc.NodePool == "default" && nc.Zone == "zone-a" {
					inA += len(nc.Pods)
				}
			}
			if len(plan.Unschedulable) != 0 || inA != tc.wantInA {
				t.Errorf("%d spreading pods in zone-a, want %d; unschedulable %v", inA, tc.wantInA, reasonsOf(plan))
			}
		})
	}
}

// TestRandomInclusionPolicies solves random workloads whose spreads mix node inclusion policies with node
// selectors, tolerations, tainted NodePools and existing nodes the policies may exclude, and has the
// checker validate every plan.
func TestRandomInclusionPolicies(t *testing.T) {
	for seed := int64(0); seed < 150; seed++ {
		rng := rand.New(rand.NewSource(seed))
		in := randomInput(rng)
		policy := func() *corev1.NodeInclusionPolicy {
			p := []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}[rng.Intn(2)]
			if rng.Intn(3) == 0 {
				return nil
			}
			return &p
		}
		for _, p := range in.Pods {
			if rng.Intn(2) == 0 {
				continue
			}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: int32(1 + rng.Intn(2)), TopologyKey: v1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": p.Labels["app"]}},
				NodeAffinityPolicy: policy(), NodeTaintsPolicy: policy()}}
			if rng.Intn(2) == 0 {
				minDomains := int32(1 + rng.Intn(3))
				p.Spec.TopologySpreadConstraints[0].MinDomains = &minDomains
			}
			switch rng.Intn(4) {
			case 0:
				p.Spec.NodeSelector = map[string]string{v1.LabelArch: "amd64"}
			case 1:
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"c-2", "arm-4"}}}}}}}}
			case 2:
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			}
		}
		for i := range rng.Intn(4) {
			name := fmt.Sprintf("old-%d", i)
			labels := map[string]string{v1.LabelHostname: name, v1.LabelTopologyZone: testZones()[rng.Intn(3)], v1.LabelArch: []string{"amd64", "arm64"}[rng.Intn(2)]}
			var taints []corev1.Taint
			if rng.Intn(2) == 0 {
				taints = []corev1.Taint{{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule}}
			}
			in.Nodes = append(in.Nodes, solver.ExistingNode{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints},
				Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("20")}}},
				Pods: pods(rng.Intn(4), name+"-bound", "100m", "100Mi", withLabels(map[string]string{"app": []string{"web", "db", "cache"}[rng.Intn(3)]}))})
		}
		for _, policy := range []solver.PreferencePolicy{solver.PreferenceRespect, solver.PreferenceIgnore} {
			plan, err := solver.Solve(context.Background(), in, solver.Options{PreferencePolicy: policy})
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if err := checker.Check(in, plan, checker.Options{}); err != nil {
				t.Fatalf("seed %d, %s: checker rejected the plan:\n%v", seed, policy, err)
			}
		}
	}
}
