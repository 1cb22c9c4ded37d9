package solver_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
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

// selectingDaemonSet is a DaemonSet requesting cpu on the nodes whose label key is one of values (every node
// when key is empty), holding the host ports given.
func selectingDaemonSet(name, cpu, key string, values []string, hostPorts ...int32) *appsv1.DaemonSet {
	ds := daemonSet(cpu)
	ds.Name = name
	if key != "" {
		ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}}}}}
	}
	for _, p := range hostPorts {
		ds.Spec.Template.Spec.Containers[0].Ports = append(ds.Spec.Template.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: p, HostPort: p})
	}
	return ds
}

func withHostPort(port int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port})
	}
}

// A pod can't use a host port a DaemonSet holds on the node: where that DaemonSet runs on every type the
// pool may launch the pod stays pending with a reason, and elsewhere the types it runs on are left out
// (provisioning suite_test.go "Daemonsets/should account for daemonset hostports" and "should not account
// for daemonset hostports when daemonset would not schedule on selected node").
func TestDaemonSetHostPorts(t *testing.T) {
	t.Run("held on every type", func(t *testing.T) {
		in := input([]*corev1.Pod{pod("p", "1", "1Gi", withHostPort(8080))}, nodePool("default"))
		in.DaemonSets = append(in.DaemonSets, selectingDaemonSet("agent", "100m", "", nil, 8080))
		plan := solveChecked(t, in, solver.Options{})
		if len(plan.NodeClaims) != 0 || len(plan.Unschedulable) != 1 {
			t.Fatalf("want the pod pending and no claim, got claims %+v", plan.NodeClaims)
		}
		if got := reasonsOf(plan); len(got) != 1 || !strings.Contains(got[0], "host ports TCP/8080 are held by daemonset pods on every allowed instance type") {
			t.Errorf("reasons %q", got)
		}
	})
	t.Run("another port", func(t *testing.T) {
		in := input([]*corev1.Pod{pod("p", "1", "1Gi", withHostPort(8081))}, nodePool("default"))
		in.DaemonSets = append(in.DaemonSets, selectingDaemonSet("agent", "100m", "", nil, 8080))
		if plan := solveChecked(t, in, solver.Options{}); len(plan.NodeClaims) != 1 {
			t.Fatalf("want one claim, got %d (unschedulable %v)", len(plan.NodeClaims), reasonsOf(plan))
		}
	})
	t.Run("held on some types", func(t *testing.T) {
		in := input([]*corev1.Pod{pod("p", "1", "1Gi", withHostPort(8080))}, nodePool("default"))
		in.DaemonSets = append(in.DaemonSets, selectingDaemonSet("agent", "100m", v1.LabelInstanceType, []string{"c-2", "c-4"}, 8080))
		plan := solveChecked(t, in, solver.Options{})
		if len(plan.NodeClaims) != 1 {
			t.Fatalf("want one claim, got %d (unschedulable %v)", len(plan.NodeClaims), reasonsOf(plan))
		}
		if names := plan.NodeClaims[0].InstanceTypeNames; names[0] != "arm-4" || slices.Contains(names, "c-2") || slices.Contains(names, "c-4") {
			t.Errorf("types %v, want arm-4 (the cheapest without the DaemonSet) first and neither c-2 nor c-4", names)
		}
	})
	t.Run("joining an open claim", func(t *testing.T) {
		// The first pod opens a c-2 claim; the second binds the port the DaemonSet holds on c-2, so the
		// claim it joins must move to c-4.
		first := pod("first", "1", "1Gi")
		second := pod("second", "100m", "100Mi", withHostPort(8080))
		in := input([]*corev1.Pod{first, second}, nodePool("default"))
		in.DaemonSets = append(in.DaemonSets, selectingDaemonSet("agent", "100m", v1.LabelInstanceType, []string{"c-2"}, 8080))
		plan := solveChecked(t, in, solver.Options{Orders: []solver.Order{solver.OrderCPU}})
		if len(plan.Unschedulable) != 0 {
			t.Fatalf("unschedulable %v", reasonsOf(plan))
		}
		for _, nc := range plan.NodeClaims {
			if slices.Contains(nc.Pods, solver.PodRef{Namespace: "default", Name: "second"}) && slices.Contains(nc.InstanceTypeNames, "c-2") {
				t.Errorf("claim %s holds the port user but lists c-2: %v", nc.Name, nc.InstanceTypeNames)
			}
		}
	})
}

// DaemonSet overhead is decided per instance type: a DaemonSet that selects some types counts only on
// those (Karpenter's daemon overhead groups; provisioning suite_test.go "Daemonsets/should filter out
// daemonsets based on instance type requirements").
func TestDaemonSetOverheadPerInstanceType(t *testing.T) {
	cases := []struct {
		name      string
		ds        *appsv1.DaemonSet
		podCPU    string
		wantFirst string
		wantNot   string
	}{
		// 1.8 cpu fits c-2 (1.9 allocatable) unless a DaemonSet runs there.
		{"selected type overfilled", selectingDaemonSet("agent", "500m", v1.LabelInstanceType, []string{"c-2"}), "1800m", "c-4", "c-2"},
		{"selected by an AWS label", selectingDaemonSet("agent", "500m", "karpenter.k8s.aws/instance-family", []string{"c-2"}), "1800m", "c-4", "c-2"},
		// A DaemonSet of large types only must not push a small pod off the cheapest type.
		{"unselected type stays cheap", selectingDaemonSet("agent", "1", v1.LabelInstanceType, []string{"c-32", "c-64"}), "1800m", "c-2", ""},
		{"unselected by an AWS label", selectingDaemonSet("agent", "1", "karpenter.k8s.aws/instance-family", []string{"c-64"}), "1800m", "c-2", ""},
		{"selects no type", selectingDaemonSet("agent", "1", v1.LabelInstanceType, []string{"none"}), "1800m", "c-2", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input([]*corev1.Pod{pod("p", tc.podCPU, "1Gi")}, nodePool("default"))
			in.DaemonSets = append(in.DaemonSets, tc.ds)
			plan := solveChecked(t, in, solver.Options{})
			if len(plan.NodeClaims) != 1 {
				t.Fatalf("want one claim, got %d (unschedulable %v)", len(plan.NodeClaims), reasonsOf(plan))
			}
			names := plan.NodeClaims[0].InstanceTypeNames
			if names[0] != tc.wantFirst || (tc.wantNot != "" && slices.Contains(names, tc.wantNot)) {
				t.Errorf("types %v, want %s first and not %q", names, tc.wantFirst, tc.wantNot)
			}
		})
	}
	t.Run("claim requests the least overhead of its types", func(t *testing.T) {
		in := input([]*corev1.Pod{pod("p", "1", "1Gi")}, nodePool("default"))
		in.DaemonSets = append(in.DaemonSets, selectingDaemonSet("small", "200m", v1.LabelInstanceType, []string{"arm-4", "c-2", "c-4", "c-8", "c-16", "c-32", "c-64"}),
			selectingDaemonSet("big", "300m", v1.LabelInstanceType, []string{"c-4", "c-8", "c-16", "c-32", "c-64"}))
		plan := solveChecked(t, in, solver.Options{})
		if len(plan.NodeClaims) != 1 || plan.NodeClaims[0].InstanceTypeNames[0] != "c-2" {
			t.Fatalf("want one claim of c-2 first, got %+v", plan.NodeClaims)
		}
		overhead, requests := plan.NodeClaims[0].DaemonSetOverhead[corev1.ResourceCPU], plan.NodeClaims[0].Requests[corev1.ResourceCPU]
		if overhead.MilliValue() != 200 || requests.MilliValue() != 1200 {
			t.Errorf("daemonset overhead %s, requests %s; want 200m and 1200m", overhead.String(), requests.String())
		}
	})
	t.Run("overhead larger than a type", func(t *testing.T) {
		in := input([]*corev1.Pod{pod("p", "100m", "100Mi")}, nodePool("default"))
		in.DaemonSets = append(in.DaemonSets, selectingDaemonSet("agent", "3", v1.LabelInstanceType, []string{"c-2"}))
		plan := solveChecked(t, in, solver.Options{})
		if len(plan.NodeClaims) != 1 || slices.Contains(plan.NodeClaims[0].InstanceTypeNames, "c-2") {
			t.Fatalf("c-2 can't hold its DaemonSet; got %+v", plan.NodeClaims)
		}
	})
}
