package solver_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

const (
	topologySuite = "scheduling/topology_test.go: "
	provSuite     = "suite_test.go: "
)

// topologyPool is the topology suite's NodePool: capacity type Exists.
func topologyPool(mutate ...func(*v1.NodePool)) *v1.NodePool {
	return upstreamPool(append([]func(*v1.NodePool){poolRequirements(req(v1.CapacityTypeLabelKey, exists))}, mutate...)...)
}

// upstreamDaemonSet is test.DaemonSet with the pod options upstream's daemonset tests use.
func upstreamDaemonSet(name string, list corev1.ResourceList, mutate ...func(*corev1.Pod)) *appsv1.DaemonSet {
	p := upod(name, requests(list))
	for _, m := range mutate {
		m(p)
	}
	ds := daemonSet("0")
	ds.Name = name
	ds.Spec.Template.Spec = p.Spec
	return ds
}

func cpuMem(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

func minDomains(n int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		spread(zone, 1, corev1.DoNotSchedule)(p)
		p.Spec.TopologySpreadConstraints[0].MinDomains = &n
	}
}

// Topology spread, pod affinity and anti-affinity.
func TestUpstreamTopologyScenarios(t *testing.T) {
	zonal := spread(zone, 1, corev1.DoNotSchedule)
	rr := cpuRequest("1.1")
	runUpstreamScenarios(t, []upstreamScenario{
		{name: "zonal spread", from: topologySuite + "Zonal/should balance pods across zones (match labels)",
			pools: []*v1.NodePool{topologyPool()}, pods: upods(4, "p", zonal), want: func(r scenarioResult) { r.wantSkew(zone, 1, 1, 2) }},
		{name: "zonal spread within pool zones", from: topologySuite + "Zonal/should respect NodePool zonal constraints (subset) with requirements",
			pools: []*v1.NodePool{topologyPool(poolRequirements(req(zone, in, "test-zone-1", "test-zone-2")))}, pods: upods(4, "p", zonal),
			want: func(r scenarioResult) { r.wantSkew(zone, 2, 2) }},
		{name: "zonal spread with an existing pod", from: topologySuite + "Zonal/should not violate max-skew when unsat = do not schedule",
			pools: []*v1.NodePool{topologyPool(poolRequirements(req(zone, in, "test-zone-2", "test-zone-3")))},
			nodes: []solver.ExistingNode{existingNode("zone-1-node", map[string]string{zone: "test-zone-1"}, cpuMem("1.9", "2Gi"), upod("bound", labelled(testLabels), rr))},
			pods:  upods(10, "p", zonal, rr),
			want:  func(r scenarioResult) { r.wantSkew(zone, 1, 2, 2) }},
		{name: "max skew 5 with an existing domain", from: topologySuite + "Zonal/should schedule to the non-minimum domain if its all that's available",
			pools: []*v1.NodePool{topologyPool(poolRequirements(req(zone, in, "test-zone-3")))},
			nodes: []solver.ExistingNode{
				existingNode("zone-1-node", map[string]string{zone: "test-zone-1"}, cpuMem("2", "2Gi"), upod("bound-1", labelled(testLabels), rr)),
				existingNode("zone-2-node", map[string]string{zone: "test-zone-2"}, cpuMem("2", "2Gi"), upod("bound-2", labelled(testLabels), rr))},
			pods: upods(10, "p", spread(zone, 5, corev1.DoNotSchedule), rr),
			want: func(r scenarioResult) { r.wantSkew(zone, 1, 1, 6) }},
		{name: "hostname spread", from: topologySuite + "Hostname/should balance pods across nodes",
			pools: []*v1.NodePool{topologyPool()}, pods: upods(4, "p", spread(v1.LabelHostname, 1, corev1.DoNotSchedule)),
			want: func(r scenarioResult) { r.wantSkew(v1.LabelHostname, 1, 1, 1, 1) }},
		{name: "hostname spread up to max skew", from: topologySuite + "Hostname/should balance pods on the same hostname up to maxskew",
			pools: []*v1.NodePool{topologyPool()}, pods: upods(4, "p", spread(v1.LabelHostname, 4, corev1.DoNotSchedule)),
			want: func(r scenarioResult) { r.wantSkew(v1.LabelHostname, 4) }},
		{name: "capacity type spread", from: topologySuite + "CapacityType/should balance pods across capacity types",
			pools: []*v1.NodePool{topologyPool()}, pods: upods(4, "p", spread(v1.CapacityTypeLabelKey, 1, corev1.DoNotSchedule)),
			want: func(r scenarioResult) { r.wantSkew(v1.CapacityTypeLabelKey, 2, 2) }},
		{name: "pod affinity on hostname", from: topologySuite + "Pod Affinity/Anti-Affinity/should respect pod affinity (hostname)",
			pools: []*v1.NodePool{topologyPool()},
			pods: append(upods(10, "spread", spread(v1.LabelHostname, 1, corev1.DoNotSchedule)),
				upod("aff-1", labelled(map[string]string{"security": "s2"})),
				upod("aff-2", podAffinity(v1.LabelHostname, false, map[string]string{"security": "s2"}))),
			want: func(r scenarioResult) {
				r.scheduled("aff-1", "aff-2")
				if r.where("aff-1") != r.where("aff-2") {
					r.t.Errorf("affinity pods on %s and %s, want one node", r.where("aff-1"), r.where("aff-2"))
				}
			}},
		{name: "self affinity on hostname", from: topologySuite + "Pod Affinity/Anti-Affinity/should respect self pod affinity (hostname)",
			pools: []*v1.NodePool{topologyPool()},
			pods:  upods(3, "p", labelled(map[string]string{"security": "s2"}), podAffinity(v1.LabelHostname, false, map[string]string{"security": "s2"})),
			want: func(r scenarioResult) {
				r.scheduled("p-0", "p-1", "p-2")
				if r.nodes() != 1 {
					r.t.Errorf("pods on %d nodes, want 1", r.nodes())
				}
			}},
		{name: "anti-affinity on hostname", from: topologySuite + "Pod Affinity/Anti-Affinity/should separate nodes using simple pod anti-affinity on hostname",
			pools: []*v1.NodePool{topologyPool()},
			pods: []*corev1.Pod{upod("a", labelled(map[string]string{"security": "s2"})),
				upod("b", podAffinity(v1.LabelHostname, true, map[string]string{"security": "s2"}))},
			want: func(r scenarioResult) {
				r.scheduled("a", "b")
				if r.where("a") == r.where("b") {
					r.t.Error("anti-affine pods share a node")
				}
			}},
		{name: "affinity to a non-existent pod", from: topologySuite + "Pod Affinity/Anti-Affinity/should not schedule pods with affinity to a non-existent pod",
			pools: []*v1.NodePool{topologyPool()},
			pods:  []*corev1.Pod{upod("p", podAffinity(zone, false, map[string]string{"security": "s2"}))},
			want:  func(r scenarioResult) { r.pending("p") }},
		{name: "zonal anti-affinity against an existing pod", from: topologySuite + "Pod Affinity/Anti-Affinity/should not violate pod anti-affinity on zone",
			pools: []*v1.NodePool{topologyPool()},
			pods: []*corev1.Pod{
				upod("zone-1", labelled(map[string]string{"security": "s2"}), nodeRequirements(nsr(zone, in, "test-zone-1"))),
				upod("zone-2", labelled(map[string]string{"security": "s2"}), nodeRequirements(nsr(zone, in, "test-zone-2"))),
				upod("zone-3", labelled(map[string]string{"security": "s2"}), nodeRequirements(nsr(zone, in, "test-zone-3"))),
				upod("anti", podAffinity(zone, true, map[string]string{"security": "s2"}))},
			want: func(r scenarioResult) {
				r.scheduled("zone-1", "zone-2", "zone-3")
				r.pending("anti")
			}},
		{name: "pod affinity on zone follows the target", from: topologySuite + "Pod Affinity/Anti-Affinity/should support pod affinity with zone topology (constrained target)",
			pools: []*v1.NodePool{topologyPool()},
			pods: append([]*corev1.Pod{upod("target", labelled(map[string]string{"app": "db"}), nodeRequirements(nsr(zone, in, "test-zone-1")))},
				upods(5, "follower", podAffinity(zone, false, map[string]string{"app": "db"}))...),
			want: func(r scenarioResult) {
				for i := range 5 {
					r.hasLabel(fmt.Sprintf("follower-%d", i), zone, "test-zone-1")
				}
			}},
		{name: "minDomains not met", from: topologySuite + "Zonal/should respect minDomains constraints",
			pools: []*v1.NodePool{topologyPool(poolRequirements(req(zone, in, "test-zone-1", "test-zone-2")))}, pods: upods(3, "p", minDomains(3)),
			want: func(r scenarioResult) { r.wantSkew(zone, 1, 1) }},
		{name: "minDomains equal", from: topologySuite + "Zonal/satisfied minDomains constraints (equal) should allow expected pod scheduling",
			pools: []*v1.NodePool{topologyPool(poolRequirements(req(zone, in, "test-zone-1", "test-zone-2", "test-zone-3")))}, pods: upods(11, "p", minDomains(3)),
			want: func(r scenarioResult) { r.wantSkew(zone, 4, 4, 3) }},
		{name: "minDomains exceeded", from: topologySuite + "Zonal/satisfied minDomains constraints (greater than minimum) should allow expected pod scheduling",
			pools: []*v1.NodePool{topologyPool(poolRequirements(req(zone, in, "test-zone-1", "test-zone-2", "test-zone-3")))}, pods: upods(11, "p", minDomains(2)),
			want: func(r scenarioResult) { r.wantSkew(zone, 4, 4, 3) }},
		{name: "self affinity on zone within a zone", from: topologySuite + "Pod Affinity/Anti-Affinity/should respect self pod affinity (zone w/ constraint)",
			pools: []*v1.NodePool{topologyPool()},
			pods: upods(3, "p", labelled(map[string]string{"security": "s2"}), podAffinity(zone, false, map[string]string{"security": "s2"}),
				nodeRequirements(nsr(zone, in, "test-zone-3"))),
			want: func(r scenarioResult) {
				for i := range 3 {
					r.hasLabel(fmt.Sprintf("p-%d", i), zone, "test-zone-3")
				}
				if r.nodes() != 1 {
					r.t.Errorf("pods on %d nodes, want 1", r.nodes())
				}
			}},
		{name: "anti-affinity owners in every zone", from: topologySuite + "Pod Affinity/Anti-Affinity/should not violate pod anti-affinity on zone (inverse)",
			pools: []*v1.NodePool{topologyPool()},
			pods: []*corev1.Pod{
				upod("zone-1", cpuRequest("2"), podAffinity(zone, true, map[string]string{"security": "s2"}), nodeSelector(zone, "test-zone-1")),
				upod("zone-2", cpuRequest("2"), podAffinity(zone, true, map[string]string{"security": "s2"}), nodeSelector(zone, "test-zone-2")),
				upod("zone-3", cpuRequest("2"), podAffinity(zone, true, map[string]string{"security": "s2"}), nodeSelector(zone, "test-zone-3")),
				upod("aff", labelled(map[string]string{"security": "s2"}))},
			want: func(r scenarioResult) {
				r.scheduled("zone-1", "zone-2", "zone-3")
				r.pending("aff")
			}},
		// Upstream leaves the second pod pending in the first pass, because the first pod's node could be in any
		// zone, and schedules it in a second pass once that node's zone is known. Lathe pins a new claim's zone
		// when a pod with zonal anti-affinity lands on it, so both go in one pass; the end state is upstream's.
		{name: "anti-affinity owner of unknown zone", from: topologySuite + "Pod Affinity/Anti-Affinity/should not violate pod anti-affinity on zone (Schrödinger)",
			pools: []*v1.NodePool{topologyPool()},
			pods: []*corev1.Pod{upod("anywhere", cpuRequest("2"), podAffinity(zone, true, map[string]string{"security": "s2"})),
				upod("aff", labelled(map[string]string{"security": "s2"}))},
			want: func(r scenarioResult) {
				r.scheduled("anywhere", "aff")
				a, _ := r.label("anywhere", zone)
				b, _ := r.label("aff", zone)
				if a == b {
					r.t.Errorf("both pods in %s", a)
				}
			}},
		{name: "pool taints tolerated or not", from: topologySuite + "Taints/should schedule pods that tolerate NodePool constraints",
			pools: []*v1.NodePool{topologyPool(tainted(corev1.Taint{Key: "test-key", Value: "test-value", Effect: corev1.TaintEffectNoSchedule}))},
			pods: []*corev1.Pod{
				upod("exists", tolerating(corev1.Toleration{Key: "test-key", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})),
				upod("equal", tolerating(corev1.Toleration{Key: "test-key", Value: "test-value", Operator: corev1.TolerationOpEqual, Effect: corev1.TaintEffectNoSchedule})),
				upod("missing"),
				upod("key-mismatch", tolerating(corev1.Toleration{Key: "invalid", Operator: corev1.TolerationOpExists})),
				upod("value-mismatch", tolerating(corev1.Toleration{Key: "test-key", Operator: corev1.TolerationOpEqual, Effect: corev1.TaintEffectNoSchedule}))},
			want: func(r scenarioResult) {
				r.scheduled("exists", "equal")
				r.pending("missing", "key-mismatch", "value-mismatch")
			}},
		{name: "startup taint", from: topologySuite + "Taints/should provision nodes with taints and schedule pods if the taint is only a startup taint",
			pools: []*v1.NodePool{topologyPool(func(np *v1.NodePool) {
				np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "ignore-me", Value: "nothing-to-see-here", Effect: corev1.TaintEffectNoSchedule}}
			})},
			pods: upods(1, "p"), want: func(r scenarioResult) { r.scheduled("p-0") }},
		{name: "host ports", from: suite + "In-Flight Nodes/should schedule pods with the same host port to different nodes",
			pods: upods(2, "p", withHostPort(8080)), want: func(r scenarioResult) {
				r.scheduled("p-0", "p-1")
				if r.where("p-0") == r.where("p-1") {
					r.t.Error("pods with the same host port share a node")
				}
			}},
	})
}

// Bin packing, instance type choice, DaemonSets, existing nodes, NodePool weights and limits.
func TestUpstreamResourceScenarios(t *testing.T) {
	runUpstreamScenarios(t, []upstreamScenario{
		{name: "more cpu than any type", from: suite + "Instance Type Compatibility/should not schedule if requesting more resources than any instance type has",
			pods: upods(1, "p", cpuRequest("512")), want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "different archs on different nodes", from: suite + "Instance Type Compatibility/should launch pods with different archs on different instances",
			pools: []*v1.NodePool{upstreamPool(poolRequirements(req(v1.LabelArch, in, "arm64", "amd64")))},
			pods:  []*corev1.Pod{upod("amd", nodeSelector(v1.LabelArch, "amd64")), upod("arm", nodeSelector(v1.LabelArch, "arm64"))},
			want: func(r scenarioResult) {
				r.scheduled("amd", "arm")
				if r.nodes() != 2 {
					r.t.Errorf("pods on %d nodes, want 2", r.nodes())
				}
			}},
		{name: "smallest instance", from: suite + "Binpacking/should schedule a small pod on the smallest instance",
			pods: upods(1, "p", memRequest("100M")), want: func(r scenarioResult) { r.hasLabel("p-0", v1.LabelInstanceType, "small-instance-type") }},
		{name: "smallest possible instance", from: suite + "Binpacking/should schedule a small pod on the smallest possible instance type",
			pods: upods(1, "p", memRequest("2000M")), want: func(r scenarioResult) { r.hasLabel("p-0", v1.LabelInstanceType, "small-instance-type") }},
		{name: "small pods on one small node", from: suite + "Binpacking/should schedule multiple small pods on the smallest possible instance type",
			pods: upods(5, "p", memRequest("10M")), want: func(r scenarioResult) {
				for i := range 5 {
					r.hasLabel(fmt.Sprintf("p-%d", i), v1.LabelInstanceType, "small-instance-type")
				}
				if r.nodes() != 1 {
					r.t.Errorf("pods on %d nodes, want 1", r.nodes())
				}
			}},
		{name: "new nodes at capacity", from: suite + "Binpacking/should create new nodes when a node is at capacity",
			pods: upods(40, "p", nodeSelector(v1.LabelArch, "amd64"), memRequest("1.8G")), want: func(r scenarioResult) {
				for i := range 40 {
					r.hasLabel(fmt.Sprintf("p-%d", i), v1.LabelInstanceType, "default-instance-type")
				}
				if r.nodes() != 20 {
					r.t.Errorf("pods on %d nodes, want 20", r.nodes())
				}
			}},
		{name: "small and large pods together", from: suite + "Binpacking/should pack small and large pods together",
			pods: append(upods(40, "large", nodeSelector(v1.LabelArch, "amd64"), memRequest("1.8G")), upods(20, "small", nodeSelector(v1.LabelArch, "amd64"), memRequest("400M"))...),
			want: func(r scenarioResult) {
				if r.nodes() != 20 {
					r.t.Errorf("pods on %d nodes, want 20", r.nodes())
				}
				r.hasLabel("small-0", v1.LabelInstanceType, "default-instance-type")
			}},
		{name: "pack tightly", from: suite + "Binpacking/should pack nodes tightly",
			types: upstreamInstanceTypes(5), pods: []*corev1.Pod{upod("big", cpuRequest("4.5")), upod("small", cpuRequest("1"))},
			want: func(r scenarioResult) {
				a, _ := r.label("big", v1.LabelInstanceType)
				b, _ := r.label("small", v1.LabelInstanceType)
				if r.nodes() != 2 || a == b {
					r.t.Errorf("pods on %d nodes of %s and %s, want two nodes of different types", r.nodes(), a, b)
				}
			}},
		{name: "daemonset overhead", from: provSuite + "Daemonsets/should account for daemonsets",
			daemonSets: []*appsv1.DaemonSet{upstreamDaemonSet("ds", cpuMem("2", "2Gi"))}, pods: upods(1, "p", requests(cpuMem("1", "1Gi"))),
			want: func(r scenarioResult) { r.hasLabel("p-0", labelInteger, "4") }},
		{name: "daemonset host port", from: provSuite + "Daemonsets/should account for daemonset hostports",
			daemonSets: []*appsv1.DaemonSet{upstreamDaemonSet("ds", cpuMem("2", "2Gi"), withHostPort(8080))}, pods: upods(1, "p", requests(cpuMem("1", "1Gi")), withHostPort(8080)),
			want: func(r scenarioResult) {
				r.pending("p-0")
				if len(r.plan.NodeClaims) != 0 {
					r.t.Errorf("%d claims, want none", len(r.plan.NodeClaims))
				}
			}},
		{name: "daemonset overhead too large", from: provSuite + "Daemonsets/should not schedule if daemonset overhead is too large",
			daemonSets: []*appsv1.DaemonSet{upstreamDaemonSet("ds", cpuMem("10000", "10000Gi"))}, pods: upods(1, "p"),
			want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "daemonset not tolerating the pool", from: provSuite + "Daemonsets/should ignore daemonsets without matching tolerations",
			pools: []*v1.NodePool{upstreamPool(func(np *v1.NodePool) {
				np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "foo", Value: "bar", Effect: corev1.TaintEffectNoSchedule}}
			})},
			daemonSets: []*appsv1.DaemonSet{upstreamDaemonSet("ds", cpuMem("2", "2Gi"))},
			pods: upods(1, "p", requests(cpuMem("1", "1Gi")), func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
			}),
			want: func(r scenarioResult) { r.hasLabel("p-0", labelInteger, "2") }},
		{name: "daemonset selecting no type", from: provSuite + "Daemonsets/should ignore daemonsets when no instance types meet the daemonset requirements",
			daemonSets: []*appsv1.DaemonSet{upstreamDaemonSet("ds", cpuMem("2", "2Gi"), nodeRequirements(nsr(v1.LabelInstanceType, in, "non-existent-instance-type")))},
			pods:       upods(1, "p", requests(cpuMem("1", "1Gi"))), want: func(r scenarioResult) { r.hasLabel("p-0", labelInteger, "2") }},
		{name: "daemonset on the pool's custom label", from: provSuite + "Daemonsets/should account for daemonsets with a custom label nodeSelector that matches the nodepool",
			pools:      []*v1.NodePool{upstreamPool(withTemplateLabels(map[string]string{"purpose": "monitoring"}))},
			daemonSets: []*appsv1.DaemonSet{upstreamDaemonSet("ds", cpuMem("2", "2Gi"), nodeSelector("purpose", "monitoring"))},
			pods:       upods(1, "p", requests(cpuMem("1", "1Gi"))), want: func(r scenarioResult) { r.hasLabel("p-0", labelInteger, "4") }},
		{name: "daemonsets per instance type", from: provSuite + "Daemonsets/should filter out daemonsets based on instance type requirements",
			daemonSets: []*appsv1.DaemonSet{
				upstreamDaemonSet("small", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, nodeRequirements(nsr(labelSize, in, "small"))),
				upstreamDaemonSet("large", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}, nodeRequirements(nsr(labelSize, in, "large")))},
			pods: upods(1, "p", requests(cpuMem("1", "1Gi"))), want: func(r scenarioResult) { r.hasLabel("p-0", labelInteger, "4") }},
		{name: "daemonset NotIn an unknown key", from: provSuite + "Daemonsets/should account daemonsets with NotIn operator and unspecified key",
			daemonSets: []*appsv1.DaemonSet{upstreamDaemonSet("ds", cpuMem("2", "2Gi"), nodeRequirements(nsr("foo", notIn, "bar")))},
			pods:       upods(1, "p", requests(cpuMem("1", "1Gi")), nodeRequirements(nsr(zone, in, "test-zone-2"))),
			want:       func(r scenarioResult) { r.hasLabel("p-0", labelInteger, "4") }},
		{name: "daemonset second affinity term", from: provSuite + "Daemonsets/should consider a daemonset schedulable with multiple node affinity terms",
			pools: []*v1.NodePool{upstreamPool(withTemplateLabels(map[string]string{"foo": "bar"}))},
			daemonSets: []*appsv1.DaemonSet{upstreamDaemonSet("ds", cpuMem("2", "2Gi"),
				requireTerms([]corev1.NodeSelectorRequirement{nsr("foo", in, "voo")}, []corev1.NodeSelectorRequirement{nsr("foo", in, "bar")}))},
			pods: upods(1, "p", requests(cpuMem("1", "1Gi"))), want: func(r scenarioResult) { r.hasLabel("p-0", labelInteger, "4") }},
		{name: "daemonset with a PreferNoSchedule pool taint", from: provSuite + "Daemonsets/should consider a daemonset schedulable with a PreferNoSchedule taint",
			pools: []*v1.NodePool{upstreamPool(func(np *v1.NodePool) {
				np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "test", Effect: corev1.TaintEffectPreferNoSchedule}}
			})},
			daemonSets: []*appsv1.DaemonSet{upstreamDaemonSet("ds", cpuMem("2", "2Gi"))},
			pods:       upods(1, "p", requests(cpuMem("1", "1Gi"))), want: func(r scenarioResult) { r.hasLabel("p-0", labelInteger, "4") }},
		{name: "daemonset host port on other types", from: provSuite + "Daemonsets/should not account for daemonset hostports when daemonset would not schedule on selected node",
			daemonSets: []*appsv1.DaemonSet{
				upstreamDaemonSet("large", cpuMem("4", "4Gi"), nodeRequirements(nsr(labelSize, in, "large")), withHostPort(8080)),
				upstreamDaemonSet("small", cpuMem("2", "2Gi"), nodeRequirements(nsr(labelSize, in, "small")), withHostPort(8081))},
			pods: upods(1, "p", requests(cpuMem("1", "1Gi")), nodeRequirements(nsr(labelSize, in, "small")), withHostPort(8080)),
			want: func(r scenarioResult) {
				r.hasLabel("p-0", labelSize, "small")
				r.hasLabel("p-0", labelInteger, "4")
			}},
		{name: "existing node first", from: suite + "Existing Nodes/should schedule a pod to an existing node unowned by Karpenter",
			nodes: []solver.ExistingNode{existingNode("existing", nil, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10"), corev1.ResourceMemory: resource.MustParse("10Gi"), corev1.ResourcePods: resource.MustParse("110")})},
			pods:  upods(1, "p", cpuRequest("10m")), want: func(r scenarioResult) {
				if w := r.where("p-0"); w != "existing" {
					r.t.Errorf("pod went to %q, want the existing node", w)
				}
			}},
		{name: "in-flight claim first", from: suite + "In-Flight Nodes/should not launch a second node if there is an in-flight node that can support the pod (node selectors)",
			inFlight: []solver.InFlightNodeClaim{inFlightSmall("in-flight", "test-zone-2", upod("initial", cpuRequest("10m"), nodeRequirements(nsr(zone, in, "test-zone-2"))))},
			pods: []*corev1.Pod{upod("second", cpuRequest("10m"), nodeRequirements(nsr(zone, in, "test-zone-1", "test-zone-2"))),
				upod("third", cpuRequest("10m"), nodeRequirements(nsr(zone, in, "test-zone-1", "test-zone-3")))},
			want: func(r scenarioResult) {
				if w := r.where("second"); w != "in-flight" {
					r.t.Errorf("second pod went to %q, want the in-flight claim", w)
				}
				if w := r.where("third"); w == "" || w == "in-flight" {
					r.t.Errorf("third pod went to %q, want a new node", w)
				}
			}},
		{name: "in-flight claim full", from: suite + "In-Flight Nodes/should launch a second node if a pod won't fit on the existingNodes node",
			inFlight: []solver.InFlightNodeClaim{inFlightSmall("in-flight", "test-zone-1", upod("initial", cpuRequest("1001m")))},
			pods:     []*corev1.Pod{upod("second", cpuRequest("1"))},
			want: func(r scenarioResult) {
				if w := r.where("second"); w == "" || w == "in-flight" {
					r.t.Errorf("second pod went to %q, want a new node", w)
				}
			}},
		{name: "heaviest pool", from: provSuite + "Multiple NodePools/Weighted NodePools/should schedule to the nodepool with the highest priority always",
			pools: []*v1.NodePool{upstreamPool(), weighted("weight-20", 20), weighted("weight-100", 100)}, pods: upods(3, "p"),
			want: func(r scenarioResult) {
				for i := range 3 {
					r.hasLabel(fmt.Sprintf("p-%d", i), v1.NodePoolLabelKey, "weight-100")
				}
			}},
		{name: "explicitly selected pool", from: provSuite + "Multiple NodePools/Weighted NodePools/should schedule to explicitly selected nodepool even if other nodePools are higher priority",
			pools: []*v1.NodePool{upstreamPool(), weighted("weight-20", 20), weighted("weight-100", 100)}, pods: upods(1, "p", nodeSelector(v1.NodePoolLabelKey, "default")),
			want: func(r scenarioResult) { r.hasLabel("p-0", v1.NodePoolLabelKey, "default") }},
		{name: "pool selected by labels", from: provSuite + "Multiple NodePools/should schedule to a NodePool by labels",
			pools: []*v1.NodePool{weighted("labelled", 0, withTemplateLabels(map[string]string{"foo": "bar"})), upstreamPool()}, pods: upods(1, "p", nodeSelector("foo", "bar")),
			want: func(r scenarioResult) { r.hasLabel("p-0", v1.NodePoolLabelKey, "labelled") }},
		{name: "PreferNoSchedule pool avoided", from: provSuite + "Multiple NodePools/should not match NodePool with PreferNoSchedule taint when other NodePool match",
			pools: []*v1.NodePool{weighted("tainted", 0, func(np *v1.NodePool) {
				np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "foo", Value: "bar", Effect: corev1.TaintEffectPreferNoSchedule}}
			}), upstreamPool()}, pods: upods(1, "p"),
			want: func(r scenarioResult) { r.hasLabel("p-0", v1.NodePoolLabelKey, "default") }},
		// Upstream's in-flight NodeClaim has 100 cpu against a limit of 20; the checker refuses any plan of a pool
		// already over its limit, so here the pool's existing node uses the limit exactly.
		{name: "limit reached", from: provSuite + "Resource Limits/should not schedule when limits are exceeded",
			pools: []*v1.NodePool{upstreamPool(func(np *v1.NodePool) { np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("20")} })},
			nodes: []solver.ExistingNode{existingNode("full", map[string]string{v1.NodePoolLabelKey: "default"}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20"), corev1.ResourcePods: resource.MustParse("0")})},
			pods:  upods(1, "p"), want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "limit would be met", from: provSuite + "Resource Limits/should schedule if limits would be met",
			pools: []*v1.NodePool{upstreamPool(func(np *v1.NodePool) { np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("2")} })},
			pods:  upods(1, "p", cpuRequest("1.75")), want: func(r scenarioResult) { r.scheduled("p-0") }},
	})
}

// inFlightSmall is a NodeClaim of the default pool launched as small-instance-type in zone, not yet a
// node, with the pods nominated to it.
func inFlightSmall(name, z string, pods ...*corev1.Pod) solver.InFlightNodeClaim {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
		Spec: v1.NodeClaimSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{req(zone, in, z), req(v1.LabelInstanceType, in, "small-instance-type")}},
		Status: v1.NodeClaimStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1900m"), corev1.ResourceMemory: resource.MustParse("2038Mi"), corev1.ResourcePods: resource.MustParse("5")},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi"), corev1.ResourcePods: resource.MustParse("5")}}}
	return solver.InFlightNodeClaim{NodeClaim: nc, Pods: pods}
}

func tainted(taints ...corev1.Taint) func(*v1.NodePool) {
	return func(np *v1.NodePool) { np.Spec.Template.Spec.Taints = taints }
}

func tolerating(tolerations ...corev1.Toleration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Tolerations = tolerations }
}

// weighted is an upstream test.NodePool with a weight.
func weighted(name string, weight int32, mutate ...func(*v1.NodePool)) *v1.NodePool {
	np := upstreamPool(mutate...)
	np.Name = name
	if weight > 0 {
		np.Spec.Weight = &weight
	}
	return np
}

// upstreamVolumes are the provisioning suite's volume objects: a WaitForFirstConsumer StorageClass of
// zones 2 and 3, a claim of it ("unbound"), and a volume in zone 3 with its bound claim ("bound").
func upstreamVolumes() solver.Volumes {
	className := "zonal"
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: className}, AllowedTopologies: []corev1.TopologySelectorTerm{{
		MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: zone, Values: []string{"test-zone-2", "test-zone-3"}}}}}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{
		Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{nsr(zone, in, "test-zone-3")}}}}}}}
	unbound := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "unbound", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &className}}
	bound := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &className, VolumeName: "pv"}}
	return solver.Volumes{Claims: []*corev1.PersistentVolumeClaim{unbound, bound}, Volumes: []*corev1.PersistentVolume{pv}, StorageClasses: []*storagev1.StorageClass{class}}
}

func withClaim(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	}
}

// Volume topology: a bound volume's zone, an unbound claim's StorageClass zones.
func TestUpstreamVolumeScenarios(t *testing.T) {
	volumeSuite := provSuite + "Volume Topology Requirements/"
	runUpstreamScenarios(t, []upstreamScenario{
		{name: "missing claim", from: volumeSuite + "should not schedule if invalid pvc",
			volumes: upstreamVolumes(), pods: upods(1, "p", withClaim("invalid")), want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "valid pods next to one with a missing claim", from: volumeSuite + "should schedule valid pods when a pod with an invalid pvc is encountered (pvc)",
			volumes: upstreamVolumes(), pods: []*corev1.Pod{upod("invalid", withClaim("invalid")), upod("valid")},
			want: func(r scenarioResult) {
				r.pending("invalid")
				r.scheduled("valid")
			}},
		{name: "storage class zones", from: volumeSuite + "should schedule to storage class zones if volume does not exist",
			volumes: upstreamVolumes(), pods: upods(1, "p", withClaim("unbound"), nodeRequirements(nsr(zone, in, "test-zone-1", "test-zone-3"))),
			want: func(r scenarioResult) { r.hasLabel("p-0", zone, "test-zone-3") }},
		{name: "storage class zones incompatible", from: volumeSuite + "should not schedule if storage class zones are incompatible",
			volumes: upstreamVolumes(), pods: upods(1, "p", withClaim("unbound"), nodeRequirements(nsr(zone, in, "test-zone-1"))),
			want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "bound volume zone", from: volumeSuite + "should schedule to volume zones if volume already bound",
			volumes: upstreamVolumes(), pods: upods(1, "p", withClaim("bound")), want: func(r scenarioResult) { r.hasLabel("p-0", zone, "test-zone-3") }},
		{name: "bound volume zone incompatible", from: volumeSuite + "should not schedule if volume zones are incompatible",
			volumes: upstreamVolumes(), pods: upods(1, "p", withClaim("bound"), nodeRequirements(nsr(zone, in, "test-zone-1"))),
			want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "volume zone kept on every term", from: volumeSuite + "should not relax an added volume topology zone node-selector away",
			volumes: upstreamVolumes(),
			pods: upods(1, "p", withClaim("bound"), requireTerms([]corev1.NodeSelectorRequirement{nsr("example.com/label", in, "unsupported")},
				[]corev1.NodeSelectorRequirement{nsr(v1.CapacityTypeLabelKey, in, v1.CapacityTypeOnDemand)})),
			want: func(r scenarioResult) { r.hasLabel("p-0", zone, "test-zone-3") }},
	})
}
