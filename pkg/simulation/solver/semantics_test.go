package solver_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// tutorialPool is the getting-started NodePool: amd64 linux on-demand c, m and r types.
func tutorialPool() *v1.NodePool {
	return nodePool("default", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
			{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
			{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
		}
	})
}

// A pod may select on a label the AWS provider registers as well known (instance family, size, cpu, ...)
// although the NodePool doesn't mention it; the instance types are narrowed to those with matching values
// (Karpenter's AllowUndefinedWellKnownLabels, with the AWS provider's labels registered).
func TestWellKnownProviderLabels(t *testing.T) {
	its, err := catalog.EC2(catalog.EC2Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		// each listed type must satisfy want
		want func(*cloudprovider.InstanceType) bool
	}{
		{"nodeSelector instance-family", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"karpenter.k8s.aws/instance-family": "c6a"}
		}, func(it *cloudprovider.InstanceType) bool {
			return it.Requirements.Get("karpenter.k8s.aws/instance-family").Has("c6a")
		}},
		{"affinity instance-size In", requireTerms([]corev1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-size", Operator: corev1.NodeSelectorOpIn, Values: []string{"2xlarge"}}}),
			func(it *cloudprovider.InstanceType) bool {
				return it.Requirements.Get("karpenter.k8s.aws/instance-size").Has("2xlarge")
			}},
		{"affinity instance-cpu Gt", requireTerms([]corev1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-cpu", Operator: corev1.NodeSelectorOpGt, Values: []string{"15"}}}),
			func(it *cloudprovider.InstanceType) bool { return it.Capacity.Cpu().Value() >= 16 }},
		{"affinity instance-generation Exists", requireTerms([]corev1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-generation", Operator: corev1.NodeSelectorOpExists}}),
			func(*cloudprovider.InstanceType) bool { return true }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := solver.Input{Pods: []*corev1.Pod{pod("p", "1", "1Gi", tc.mutate)}, NodePools: []*v1.NodePool{tutorialPool()},
				InstanceTypes: map[string]cloudprovider.InstanceTypes{"default": its}}
			plan := solveChecked(t, in, solver.Options{})
			if len(plan.Unschedulable) != 0 || len(plan.NodeClaims) != 1 {
				t.Fatalf("want one claim, got %d, unschedulable %v", len(plan.NodeClaims), reasonsOf(plan))
			}
			for _, it := range plan.NodeClaims[0].InstanceTypes {
				if !tc.want(it) {
					t.Errorf("type %s doesn't meet the pod's selector", it.Name)
				}
			}
		})
	}
	t.Run("GPU label rules out types without GPUs", func(t *testing.T) {
		in := solver.Input{Pods: []*corev1.Pod{pod("p", "1", "1Gi", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia"}
		})}, NodePools: []*v1.NodePool{tutorialPool()}, InstanceTypes: map[string]cloudprovider.InstanceTypes{"default": its}}
		plan := solveChecked(t, in, solver.Options{})
		if len(plan.NodeClaims) != 0 || len(plan.Unschedulable) != 1 {
			t.Fatalf("c, m and r types have no GPUs; got claims %v", plan.NodeClaims)
		}
	})
	t.Run("unknown label in the AWS domain is still refused", func(t *testing.T) {
		in := input([]*corev1.Pod{pod("p", "1", "1Gi", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"karpenter.k8s.aws/instance-colour": "red"}
		})}, nodePool("default"))
		plan := solveChecked(t, in, solver.Options{})
		if len(plan.NodeClaims) != 0 || len(plan.Unschedulable) != 1 {
			t.Fatalf("got claims %v", plan.NodeClaims)
		}
	})
	t.Run("small catalog: one family", func(t *testing.T) {
		plan := solveChecked(t, input([]*corev1.Pod{pod("p", "1", "1Gi", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"karpenter.k8s.aws/instance-family": "c-8"}
		})}, nodePool("default")), solver.Options{})
		if len(plan.NodeClaims) != 1 || !slices.Equal(plan.NodeClaims[0].InstanceTypeNames, []string{"c-8"}) {
			t.Fatalf("want one claim of c-8, got %+v (unschedulable %v)", plan.NodeClaims, reasonsOf(plan))
		}
		reqs, err := scheduling.FromNodePoolRequirements(plan.NodeClaims[0].Requirements)
		if err != nil || !reqs.Get("karpenter.k8s.aws/instance-family").Has("c-8") || reqs.Get("karpenter.k8s.aws/instance-family").Len() != 1 {
			t.Errorf("claim requirements %v should pin the family", plan.NodeClaims[0].Requirements)
		}
	})
}

// requireTerms gives the pod required node affinity with one term per argument (ORed).
func requireTerms(terms ...[]corev1.NodeSelectorRequirement) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		var out []corev1.NodeSelectorTerm
		for _, t := range terms {
			out = append(out, corev1.NodeSelectorTerm{MatchExpressions: t})
		}
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: out}}
	}
}

func zoneIn(zones ...string) []corev1.NodeSelectorRequirement {
	return []corev1.NodeSelectorRequirement{{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones}}
}

// Required node affinity terms are alternatives: a pod whose first term matches nothing is placed under the
// next one that does (Karpenter relaxes required terms one at a time, first to last; scheduling
// suite_test.go "Preferential Fallback/Required/should relax multiple terms").
func TestRequiredNodeAffinityTermsAreORed(t *testing.T) {
	claimZone := func(t *testing.T, plan *solver.Plan, i int) string {
		t.Helper()
		reqs, err := scheduling.FromNodePoolRequirements(plan.NodeClaims[i].Requirements)
		if err != nil {
			t.Fatal(err)
		}
		z := reqs.Get(v1.LabelTopologyZone)
		if z.Len() != 1 {
			t.Fatalf("claim %s zone %s, want one zone", plan.NodeClaims[i].Name, z)
		}
		v, _ := z.Any()
		return v
	}
	t.Run("first term matches nothing", func(t *testing.T) {
		plan := solveChecked(t, input([]*corev1.Pod{pod("p", "1", "1Gi", requireTerms(zoneIn("nowhere"), zoneIn("zone-b")))}, nodePool("default")), solver.Options{})
		if len(plan.NodeClaims) != 1 || len(plan.Unschedulable) != 0 {
			t.Fatalf("want one claim, got %d (unschedulable %v)", len(plan.NodeClaims), reasonsOf(plan))
		}
		if z := claimZone(t, plan, 0); z != "zone-b" {
			t.Errorf("zone %s, want zone-b", z)
		}
	})
	t.Run("upstream: should relax multiple terms", func(t *testing.T) {
		plan := solveChecked(t, input([]*corev1.Pod{pod("p", "1", "1Gi", requireTerms(zoneIn("invalid"), zoneIn("invalid"), zoneIn("zone-a"), zoneIn("zone-b")))}, nodePool("default")), solver.Options{})
		if len(plan.NodeClaims) != 1 || claimZone(t, plan, 0) != "zone-a" {
			t.Fatalf("want one claim in zone-a, got %+v (unschedulable %v)", plan.NodeClaims, reasonsOf(plan))
		}
	})
	t.Run("each term fits a different zone", func(t *testing.T) {
		// Zonal anti-affinity keeps the pods in different zones; each may go to zone-a or zone-b, so the
		// second goes to zone-b under its second term.
		anti := func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "db"}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: v1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}}
		}
		plan := solveChecked(t, input(pods(2, "db", "1", "1Gi", anti, requireTerms(zoneIn("zone-a"), zoneIn("zone-b"))), nodePool("default")), solver.Options{})
		if len(plan.NodeClaims) != 2 || len(plan.Unschedulable) != 0 {
			t.Fatalf("want two claims, got %d (unschedulable %v)", len(plan.NodeClaims), reasonsOf(plan))
		}
		zones := []string{claimZone(t, plan, 0), claimZone(t, plan, 1)}
		slices.Sort(zones)
		if !slices.Equal(zones, []string{"zone-a", "zone-b"}) {
			t.Errorf("zones %v, want zone-a and zone-b", zones)
		}
		// A third pod has no zone left among its terms.
		plan = solveChecked(t, input(pods(3, "db", "1", "1Gi", anti, requireTerms(zoneIn("zone-a"), zoneIn("zone-b"))), nodePool("default")), solver.Options{})
		if len(plan.NodeClaims) != 2 || len(plan.Unschedulable) != 1 {
			t.Fatalf("want two claims and one pending pod, got %d claims (unschedulable %v)", len(plan.NodeClaims), reasonsOf(plan))
		}
		if got := reasonsOf(plan); len(got) != 1 || !strings.Contains(got[0], "node affinity term 1: ") || !strings.Contains(got[0], "node affinity term 2: ") {
			t.Errorf("reasons %q should explain each term", got)
		}
	})
	t.Run("open claim under the second term", func(t *testing.T) {
		// The first pod opens a zone-b claim; the second may join it under its second term instead of
		// launching a node in zone-a.
		first := pod("first", "1", "1Gi", requireTerms(zoneIn("zone-b")))
		second := pod("second", "500m", "512Mi", requireTerms(zoneIn("zone-a"), zoneIn("zone-b")))
		plan := solveChecked(t, input([]*corev1.Pod{first, second}, nodePool("default")), solver.Options{Orders: []solver.Order{solver.OrderCPU}})
		if len(plan.NodeClaims) != 1 || len(plan.Unschedulable) != 0 || claimZone(t, plan, 0) != "zone-b" {
			t.Fatalf("want one zone-b claim for both pods, got %+v (unschedulable %v)", plan.NodeClaims, reasonsOf(plan))
		}
	})
}
