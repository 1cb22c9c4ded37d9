package solver_test

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// Scenarios ported from Karpenter v1.14's scheduling tests (kubernetes-sigs/karpenter @ v1.14.1,
// pkg/controllers/provisioning/scheduling/{suite,topology}_test.go and pkg/controllers/provisioning/
// suite_test.go), with the expected outcome taken from the upstream test. Each case names its source as
// "<file>: <It title>" (file relative to pkg/controllers/provisioning).
//
// Upstream runs them on its fake cloud provider; upstreamCatalog reproduces its default instance types.
// The fake provider's custom well-known labels are mapped to AWS well-known labels, which Lathe knows:
// "size" is karpenter.k8s.aws/instance-size, "special" karpenter.k8s.aws/instance-accelerator-name and
// "integer" karpenter.k8s.aws/instance-cpu.
const (
	labelSize    = "karpenter.k8s.aws/instance-size"
	labelSpecial = "karpenter.k8s.aws/instance-accelerator-name"
	labelInteger = "karpenter.k8s.aws/instance-cpu"
)

// upstreamType mirrors fake.NewInstanceType: 4 cpu, 4Gi, 5 pods unless given; spot in zones 1-2 and
// on-demand in zones 1-3, all at one price (0.1 per cpu and per GB); linux, windows and darwin; 100m cpu
// and 10Mi memory kube-reserved; size large (with special=optional) above 4 cpu and 8Gi, else small.
func upstreamType(name, arch string, resources corev1.ResourceList, oses ...string) *cloudprovider.InstanceType {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("5")}
	for k, v := range resources {
		capacity[k] = v
	}
	price := 0.0
	for k, v := range capacity {
		switch k {
		case corev1.ResourceCPU:
			price += 0.1 * v.AsApproximateFloat64()
		case corev1.ResourceMemory:
			price += 0.1 * v.AsApproximateFloat64() / 1e9
		case "fake.com/vendor-a", "fake.com/vendor-b":
			price += 1
		}
	}
	offerings := cloudprovider.Offerings{
		{Zone: "test-zone-1", CapacityType: v1.CapacityTypeSpot, Price: price, Available: true},
		{Zone: "test-zone-2", CapacityType: v1.CapacityTypeSpot, Price: price, Available: true},
		{Zone: "test-zone-1", CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
		{Zone: "test-zone-2", CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
		{Zone: "test-zone-3", CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
	}
	if len(oses) == 0 {
		oses = []string{"darwin", "linux", "windows"}
	}
	cpu, mem := capacity[corev1.ResourceCPU], capacity[corev1.ResourceMemory]
	reqs := scheduling.NewRequirements(
		scheduling.MustRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, name),
		scheduling.MustRequirement(v1.LabelArch, corev1.NodeSelectorOpIn, arch),
		scheduling.MustRequirement(v1.LabelOS, corev1.NodeSelectorOpIn, oses...),
		scheduling.MustRequirement(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "test-zone-1", "test-zone-2", "test-zone-3"),
		scheduling.MustRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand),
		scheduling.MustRequirement(labelInteger, corev1.NodeSelectorOpIn, fmt.Sprint(cpu.Value())),
	)
	if cpu.Cmp(resource.MustParse("4")) > 0 && mem.Cmp(resource.MustParse("8Gi")) > 0 {
		reqs.Add(scheduling.MustRequirement(labelSize, corev1.NodeSelectorOpIn, "large"))
		reqs.Add(scheduling.MustRequirement(labelSpecial, corev1.NodeSelectorOpIn, "optional"))
	} else {
		reqs.Add(scheduling.MustRequirement(labelSize, corev1.NodeSelectorOpIn, "small"))
		reqs.Add(scheduling.MustRequirement(labelSpecial, corev1.NodeSelectorOpDoesNotExist))
	}
	return &cloudprovider.InstanceType{Name: name, Requirements: reqs, Offerings: offerings, Capacity: capacity,
		Overhead: cloudprovider.InstanceTypeOverhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("10Mi")}}}
}

// upstreamCatalog is the fake cloud provider's default list of instance types.
func upstreamCatalog() cloudprovider.InstanceTypes {
	return cloudprovider.InstanceTypes{
		upstreamType("default-instance-type", "amd64", nil),
		upstreamType("small-instance-type", "amd64", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")}),
		upstreamType("gpu-vendor-instance-type", "amd64", corev1.ResourceList{"fake.com/vendor-a": resource.MustParse("2")}),
		upstreamType("gpu-vendor-b-instance-type", "amd64", corev1.ResourceList{"fake.com/vendor-b": resource.MustParse("2")}),
		upstreamType("arm-instance-type", "arm64", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("128Gi")}, "darwin", "ios", "linux", "windows"),
		upstreamType("single-pod-instance-type", "amd64", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}),
	}
}

// upstreamInstanceTypes mirrors fake.InstanceTypes(n): fake-it-<i> with i+1 cpu, 2(i+1)Gi and 10(i+1) pods.
func upstreamInstanceTypes(n int) cloudprovider.InstanceTypes {
	var out cloudprovider.InstanceTypes
	for i := range n {
		out = append(out, upstreamType(fmt.Sprintf("fake-it-%d", i), "amd64", corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(int64(i+1), resource.DecimalSI),
			corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", 2*(i+1))),
			corev1.ResourcePods:   *resource.NewQuantity(int64(10*(i+1)), resource.DecimalSI),
		}))
	}
	return out
}

// upstreamPool is the scheduling suite's NodePool: every capacity type, a 2000 cpu limit.
func upstreamPool(mutate ...func(*v1.NodePool)) *v1.NodePool {
	np := nodePool("default", func(np *v1.NodePool) {
		np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("2000")}
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand, v1.CapacityTypeReserved}}}
	})
	for _, m := range mutate {
		m(np)
	}
	return np
}

func poolRequirements(reqs ...v1.NodeSelectorRequirementWithMinValues) func(*v1.NodePool) {
	return func(np *v1.NodePool) { np.Spec.Template.Spec.Requirements = reqs }
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirementWithMinValues {
	return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func nsr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// upod is upstream's test.UnschedulablePod: no requests unless given.
func upod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := pod(name, "0", "0", mutate...)
	return p
}

func upods(n int, prefix string, mutate ...func(*corev1.Pod)) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, upod(fmt.Sprintf("%s-%d", prefix, i), mutate...))
	}
	return out
}

func requests(list corev1.ResourceList) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = list }
}

func cpuRequest(q string) func(*corev1.Pod) {
	return requests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)})
}

func memRequest(q string) func(*corev1.Pod) {
	return requests(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)})
}

func nodeSelector(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		for i := 0; i < len(kv); i += 2 {
			p.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

// nodeRequirements is upstream's PodOptions.NodeRequirements: one required term.
func nodeRequirements(reqs ...corev1.NodeSelectorRequirement) func(*corev1.Pod) {
	return requireTerms(reqs)
}

// nodePreferences is upstream's PodOptions.NodePreferences: one preferred term of weight 1.
func nodePreferences(reqs ...corev1.NodeSelectorRequirement) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		if p.Spec.Affinity.NodeAffinity == nil {
			p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: reqs}})
	}
}

var testLabels = map[string]string{"test": "test"}

func spread(key string, maxSkew int32, unsat corev1.UnsatisfiableConstraintAction) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Labels = testLabels
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: unsat, LabelSelector: &metav1.LabelSelector{MatchLabels: testLabels}})
	}
}

func podAffinity(key string, anti bool, selector map[string]string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		term := corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: selector}}
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		if anti {
			p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}
		} else {
			p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}
		}
	}
}

func labelled(labels map[string]string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels = labels }
}

// existingNode is a ready node with the labels given (and room for 100 pods unless said), with the pods
// bound to it.
func existingNode(name string, labels map[string]string, allocatable corev1.ResourceList, bound ...*corev1.Pod) solver.ExistingNode {
	l := map[string]string{v1.LabelHostname: name}
	for k, v := range labels {
		l[k] = v
	}
	if allocatable == nil {
		allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("64Gi")}
	}
	if _, ok := allocatable[corev1.ResourcePods]; !ok {
		allocatable = allocatable.DeepCopy()
		allocatable[corev1.ResourcePods] = resource.MustParse("100")
	}
	return solver.ExistingNode{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Status: corev1.NodeStatus{Allocatable: allocatable, Capacity: allocatable}}, Pods: bound}
}

// scenarioResult answers the questions upstream's expectations ask of a plan.
type scenarioResult struct {
	t    *testing.T
	in   solver.Input
	plan *solver.Plan
}

// where returns the node (existing node or new claim) a pod went to, or "" when it is pending.
func (r scenarioResult) where(name string) string {
	for _, pl := range r.plan.Placements {
		if pl.Pod.Name == name {
			return pl.Target
		}
	}
	for _, nc := range r.plan.NodeClaims {
		for _, p := range nc.Pods {
			if p.Name == name {
				return nc.Name
			}
		}
	}
	return ""
}

func (r scenarioResult) scheduled(names ...string) {
	r.t.Helper()
	for _, n := range names {
		if r.where(n) == "" {
			r.t.Errorf("pod %s is pending, want it scheduled (reasons %v)", n, reasonsOf(r.plan))
		}
	}
}

func (r scenarioResult) pending(names ...string) {
	r.t.Helper()
	for _, n := range names {
		if w := r.where(n); w != "" {
			r.t.Errorf("pod %s went to %s, want it pending", n, w)
		}
	}
}

// label is the value of key on the node the pod went to: the launched (cheapest) offering's zone and
// capacity type and the first instance type for a new claim, else the value its requirements or its first
// instance type fix; the node's label for an existing node.
func (r scenarioResult) label(podName, key string) (string, bool) {
	target := r.where(podName)
	for _, n := range r.in.Nodes {
		if n.Node.Name == target {
			v, ok := n.Node.Labels[key]
			return v, ok
		}
	}
	for _, nc := range r.plan.NodeClaims {
		if nc.Name != target {
			continue
		}
		switch key {
		case v1.LabelTopologyZone:
			return nc.Zone, true
		case v1.CapacityTypeLabelKey:
			return nc.CapacityType, true
		case v1.LabelInstanceType:
			return nc.InstanceTypeNames[0], true
		case v1.LabelHostname:
			return nc.Name, true
		}
		reqs, err := scheduling.FromNodePoolRequirements(nc.Requirements)
		if err != nil {
			r.t.Fatal(err)
		}
		if v, ok := reqs.Labels()[key]; ok {
			return v, true
		}
		v, ok := nc.InstanceTypes[0].Requirements.Labels()[key]
		return v, ok
	}
	return "", false
}

func (r scenarioResult) hasLabel(podName, key, want string) {
	r.t.Helper()
	if got, ok := r.label(podName, key); !ok || got != want {
		r.t.Errorf("pod %s: node label %s = %q (present %v), want %q", podName, key, got, ok, want)
	}
}

// nodes is the number of distinct nodes the named pods (every input pod when none are named) went to.
func (r scenarioResult) nodes(names ...string) int {
	if len(names) == 0 {
		for _, p := range r.in.Pods {
			names = append(names, p.Name)
		}
	}
	seen := map[string]bool{}
	for _, n := range names {
		if w := r.where(n); w != "" {
			seen[w] = true
		}
	}
	return len(seen)
}

// skew counts the pods labelled test=test per value of key (bound pods included), sorted, as upstream's
// ExpectSkew does.
func (r scenarioResult) skew(key string) []int {
	counts := map[string]int{}
	for _, n := range r.in.Nodes {
		for _, p := range n.Pods {
			if p.Labels["test"] == "test" {
				if v, ok := n.Node.Labels[key]; ok {
					counts[v]++
				}
			}
		}
	}
	for _, p := range r.in.Pods {
		if p.Labels["test"] != "test" || r.where(p.Name) == "" {
			continue
		}
		if v, ok := r.label(p.Name, key); ok {
			counts[v]++
		}
	}
	var out []int
	for _, c := range counts {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

func (r scenarioResult) wantSkew(key string, want ...int) {
	r.t.Helper()
	slices.Sort(want)
	if got := r.skew(key); !slices.Equal(got, want) {
		r.t.Errorf("skew on %s = %v, want %v", key, got, want)
	}
}

type upstreamScenario struct {
	name string
	// from is "<file>: <It title>", the upstream test the case reproduces.
	from       string
	pools      []*v1.NodePool // default: upstreamPool()
	types      cloudprovider.InstanceTypes
	pods       []*corev1.Pod
	daemonSets []*appsv1.DaemonSet
	nodes      []solver.ExistingNode
	inFlight   []solver.InFlightNodeClaim
	volumes    solver.Volumes
	opts       solver.Options
	want       func(r scenarioResult)
	// skip names a known difference from upstream, reported instead of asserted.
	skip string
}

func runUpstreamScenarios(t *testing.T, cases []upstreamScenario) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip != "" {
				t.Skip("known difference: " + tc.skip + " (" + tc.from + ")")
			}
			pools := tc.pools
			if pools == nil {
				pools = []*v1.NodePool{upstreamPool()}
			}
			types := tc.types
			if types == nil {
				types = upstreamCatalog()
			}
			in := solver.Input{Pods: tc.pods, NodePools: pools, InstanceTypes: map[string]cloudprovider.InstanceTypes{}, DaemonSets: tc.daemonSets, Nodes: tc.nodes, InFlight: tc.inFlight, Volumes: tc.volumes}
			for _, p := range pools {
				in.InstanceTypes[p.Name] = types
			}
			plan := solveChecked(t, in, tc.opts)
			t.Logf("from %s", tc.from)
			tc.want(scenarioResult{t: t, in: in, plan: plan})
		})
	}
}
