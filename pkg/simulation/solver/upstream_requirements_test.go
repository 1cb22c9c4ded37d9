package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

const (
	in           = corev1.NodeSelectorOpIn
	notIn        = corev1.NodeSelectorOpNotIn
	exists       = corev1.NodeSelectorOpExists
	doesNotExist = corev1.NodeSelectorOpDoesNotExist
	zone         = v1.LabelTopologyZone
	suite        = "scheduling/suite_test.go: "
)

func withTemplateLabels(labels map[string]string) func(*v1.NodePool) {
	return func(np *v1.NodePool) { np.Spec.Template.Labels = labels }
}

// Requirement algebra against NodePools and instance types: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte,
// Lte, custom and well-known labels, preferences and required terms.
func TestUpstreamRequirementScenarios(t *testing.T) {
	testKey := func(values ...string) func(*v1.NodePool) {
		return poolRequirements(req("test-key", in, values...))
	}
	runUpstreamScenarios(t, []upstreamScenario{
		{name: "pool labels on unconstrained pod", from: suite + "Custom Constraints/NodePool with Labels/should schedule unconstrained pods that don't have matching node selectors",
			pools: []*v1.NodePool{upstreamPool(withTemplateLabels(map[string]string{"test-key": "test-value"}))}, pods: upods(1, "p"),
			want: func(r scenarioResult) { r.hasLabel("p-0", "test-key", "test-value") }},
		{name: "conflicting node selector", from: suite + "Custom Constraints/NodePool with Labels/should not schedule pods that have conflicting node selectors",
			pools: []*v1.NodePool{upstreamPool(withTemplateLabels(map[string]string{"test-key": "test-value"}))}, pods: upods(1, "p", nodeSelector("test-key", "different-value")),
			want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "undefined custom key", from: suite + "Custom Constraints/NodePool with Labels/should not schedule pods that have node selectors with undefined key",
			pods: upods(1, "p", nodeSelector("test-key", "test-value")), want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "matching requirements on pool labels", from: suite + "Custom Constraints/NodePool with Labels/should schedule pods that have matching requirements",
			pools: []*v1.NodePool{upstreamPool(withTemplateLabels(map[string]string{"test-key": "test-value"}))},
			pods:  upods(1, "p", nodeRequirements(nsr("test-key", in, "test-value", "another-value"))),
			want:  func(r scenarioResult) { r.hasLabel("p-0", "test-key", "test-value") }},
		{name: "conflicting requirements on pool labels", from: suite + "Custom Constraints/NodePool with Labels/should not schedule pods that have conflicting requirements",
			pools: []*v1.NodePool{upstreamPool(withTemplateLabels(map[string]string{"test-key": "test-value"}))},
			pods:  upods(1, "p", nodeRequirements(nsr("test-key", in, "another-value"))), want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "pool zone constraint", from: suite + "Custom Constraints/Well Known Labels/should use NodePool constraints",
			pools: []*v1.NodePool{upstreamPool(poolRequirements(req(zone, in, "test-zone-2")))}, pods: upods(1, "p"),
			want: func(r scenarioResult) { r.hasLabel("p-0", zone, "test-zone-2") }},
		{name: "zone node selector", from: suite + "Custom Constraints/Well Known Labels/should use node selectors",
			pools: []*v1.NodePool{upstreamPool(poolRequirements(req(zone, in, "test-zone-1", "test-zone-2")))}, pods: upods(1, "p", nodeSelector(zone, "test-zone-2")),
			want: func(r scenarioResult) { r.hasLabel("p-0", zone, "test-zone-2") }},
		{name: "hostname selector", from: suite + "Custom Constraints/Well Known Labels/should not schedule nodes with a hostname selector",
			pods: upods(1, "p", nodeSelector(v1.LabelHostname, "red-node")), want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "unknown zone", from: suite + "Custom Constraints/Well Known Labels/should not schedule the pod if nodeselector unknown",
			pools: []*v1.NodePool{upstreamPool(poolRequirements(req(zone, in, "test-zone-1")))}, pods: upods(1, "p", nodeSelector(zone, "unknown")),
			want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "zone outside the pool", from: suite + "Custom Constraints/Well Known Labels/should not schedule if node selector outside of NodePool constraints",
			pools: []*v1.NodePool{upstreamPool(poolRequirements(req(zone, in, "test-zone-1")))}, pods: upods(1, "p", nodeSelector(zone, "test-zone-2")),
			want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "In zone", from: suite + "Custom Constraints/Well Known Labels/should schedule compatible requirements with Operator=In",
			pods: upods(1, "p", nodeRequirements(nsr(zone, in, "test-zone-3"))), want: func(r scenarioResult) { r.hasLabel("p-0", zone, "test-zone-3") }},
		{name: "Gt on the pool", from: suite + "Custom Constraints/Well Known Labels/should schedule compatible requirements with Operator=Gt",
			pools: []*v1.NodePool{upstreamPool(poolRequirements(req(labelInteger, corev1.NodeSelectorOpGt, "8")))}, pods: upods(1, "p"),
			want: func(r scenarioResult) { r.hasLabel("p-0", labelInteger, "16") }},
		{name: "Lt on the pool", from: suite + "Custom Constraints/Well Known Labels/should schedule compatible requirements with Operator=Lt",
			pools: []*v1.NodePool{upstreamPool(poolRequirements(req(labelInteger, corev1.NodeSelectorOpLt, "8")))}, pods: upods(1, "p"),
			want: func(r scenarioResult) { r.hasLabel("p-0", labelInteger, "2") }},
		{name: "Gte on the pool", from: suite + "Custom Constraints/Well Known Labels/should schedule compatible requirements with Operator=Gte",
			pools: []*v1.NodePool{upstreamPool(poolRequirements(req(labelInteger, v1.NodeSelectorOpGte, "16")))}, pods: upods(1, "p"),
			want: func(r scenarioResult) { r.hasLabel("p-0", labelInteger, "16") }},
		{name: "Lte on the pool", from: suite + "Custom Constraints/Well Known Labels/should schedule compatible requirements with Operator=Lte",
			pools: []*v1.NodePool{upstreamPool(poolRequirements(req(labelInteger, v1.NodeSelectorOpLte, "2")))}, pods: upods(1, "p"),
			want: func(r scenarioResult) { r.hasLabel("p-0", labelInteger, "2") }},
		{name: "In unknown zone", from: suite + "Custom Constraints/Well Known Labels/should not schedule incompatible preferences and requirements with Operator=In",
			pods: upods(1, "p", nodeRequirements(nsr(zone, in, "unknown"))), want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "NotIn zones", from: suite + "Custom Constraints/Well Known Labels/should schedule compatible requirements with Operator=NotIn",
			pods: upods(1, "p", nodeRequirements(nsr(zone, notIn, "test-zone-1", "test-zone-2", "unknown"))), want: func(r scenarioResult) { r.hasLabel("p-0", zone, "test-zone-3") }},
		{name: "NotIn every zone", from: suite + "Custom Constraints/Well Known Labels/should not schedule incompatible preferences and requirements with Operator=NotIn",
			pods: upods(1, "p", nodeRequirements(nsr(zone, notIn, "test-zone-1", "test-zone-2", "test-zone-3", "unknown"))), want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "compatible preference In", from: suite + "Custom Constraints/Well Known Labels/should schedule compatible preferences and requirements with Operator=In",
			pods: upods(1, "p", nodeRequirements(nsr(zone, in, "test-zone-1", "test-zone-2", "test-zone-3", "unknown")), nodePreferences(nsr(zone, in, "test-zone-2", "unknown"))),
			want: func(r scenarioResult) { r.hasLabel("p-0", zone, "test-zone-2") }},
		{name: "incompatible preference In", from: suite + "Custom Constraints/Well Known Labels/should schedule incompatible preferences and requirements with Operator=In",
			pods: upods(1, "p", nodeRequirements(nsr(zone, in, "test-zone-1", "test-zone-2", "test-zone-3", "unknown")), nodePreferences(nsr(zone, in, "unknown"))),
			want: func(r scenarioResult) { r.scheduled("p-0") }},
		{name: "compatible preference NotIn", from: suite + "Custom Constraints/Well Known Labels/should schedule compatible preferences and requirements with Operator=NotIn",
			pods: upods(1, "p", nodeRequirements(nsr(zone, in, "test-zone-1", "test-zone-2", "test-zone-3", "unknown")), nodePreferences(nsr(zone, notIn, "test-zone-1", "test-zone-3"))),
			want: func(r scenarioResult) { r.hasLabel("p-0", zone, "test-zone-2") }},
		{name: "multidimensional selectors", from: suite + "Custom Constraints/Well Known Labels/should combine multidimensional node selectors, preferences and requirements",
			pods: upods(1, "p", nodeSelector(zone, "test-zone-3", v1.LabelInstanceType, "arm-instance-type"),
				nodeRequirements(nsr(zone, in, "test-zone-1", "test-zone-3"), nsr(v1.LabelInstanceType, in, "default-instance-type", "arm-instance-type")),
				nodePreferences(nsr(zone, notIn, "unknown"), nsr(v1.LabelInstanceType, notIn, "unknown"))),
			want: func(r scenarioResult) {
				r.hasLabel("p-0", zone, "test-zone-3")
				r.hasLabel("p-0", v1.LabelInstanceType, "arm-instance-type")
			}},
		{name: "In undefined key", from: suite + "Custom Constraints/Scheduling Logic/should not schedule pods that have node selectors with In operator and undefined key",
			pods: upods(1, "p", nodeRequirements(nsr("test-key", in, "test-value"))), want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "NotIn undefined key", from: suite + "Custom Constraints/Scheduling Logic/should schedule pods that have node selectors with NotIn operator and undefined key",
			pods: upods(1, "p", nodeRequirements(nsr("test-key", notIn, "test-value"))), want: func(r scenarioResult) {
				r.scheduled("p-0")
				if v, ok := r.label("p-0", "test-key"); ok && v == "test-value" {
					r.t.Error("node has test-key=test-value")
				}
			}},
		{name: "Exists undefined key", from: suite + "Custom Constraints/Scheduling Logic/should not schedule pods that have node selectors with Exists operator and undefined key",
			pods: upods(1, "p", nodeRequirements(nsr("test-key", exists))), want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "DoesNotExist undefined key", from: suite + "Custom Constraints/Scheduling Logic/should schedule pods that with DoesNotExists operator and undefined key",
			pods: upods(1, "p", nodeRequirements(nsr("test-key", doesNotExist))), want: func(r scenarioResult) {
				r.scheduled("p-0")
				if _, ok := r.label("p-0", "test-key"); ok {
					r.t.Error("node has test-key")
				}
			}},
		{name: "pool requirement label", from: suite + "Custom Constraints/Scheduling Logic/should schedule unconstrained pods that don't have matching node selectors",
			pools: []*v1.NodePool{upstreamPool(testKey("test-value"))}, pods: upods(1, "p"), want: func(r scenarioResult) { r.hasLabel("p-0", "test-key", "test-value") }},
		{name: "NotIn the pool's only value", from: suite + "Custom Constraints/Scheduling Logic/should not schedule pods that have node selectors with matching value and NotIn operator",
			pools: []*v1.NodePool{upstreamPool(testKey("test-value"))}, pods: upods(1, "p", nodeRequirements(nsr("test-key", notIn, "test-value"))),
			want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "Exists defined key", from: suite + "Custom Constraints/Scheduling Logic/should schedule the pod with Exists operator and defined key",
			pools: []*v1.NodePool{upstreamPool(testKey("test-value"))}, pods: upods(1, "p", nodeRequirements(nsr("test-key", exists))),
			want: func(r scenarioResult) { r.scheduled("p-0") }},
		{name: "DoesNotExist defined key", from: suite + "Custom Constraints/Scheduling Logic/should not schedule the pod with DoesNotExists operator and defined key",
			pools: []*v1.NodePool{upstreamPool(testKey("test-value"))}, pods: upods(1, "p", nodeRequirements(nsr("test-key", doesNotExist))),
			want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "NotIn another value", from: suite + "Custom Constraints/Scheduling Logic/should schedule pods that have node selectors with different value and NotIn operator",
			pools: []*v1.NodePool{upstreamPool(testKey("test-value"))}, pods: upods(1, "p", nodeRequirements(nsr("test-key", notIn, "another-value"))),
			want: func(r scenarioResult) { r.hasLabel("p-0", "test-key", "test-value") }},
		{name: "compatible pods share a node", from: suite + "Custom Constraints/Scheduling Logic/should schedule compatible pods to the same node",
			pools: []*v1.NodePool{upstreamPool(testKey("test-value", "another-value"))},
			pods:  []*corev1.Pod{upod("a", nodeRequirements(nsr("test-key", in, "test-value"))), upod("b", nodeRequirements(nsr("test-key", notIn, "another-value")))},
			want: func(r scenarioResult) {
				r.hasLabel("a", "test-key", "test-value")
				r.hasLabel("b", "test-key", "test-value")
				if r.where("a") != r.where("b") {
					r.t.Errorf("pods on %s and %s, want one node", r.where("a"), r.where("b"))
				}
			}},
		{name: "incompatible pods on different nodes", from: suite + "Custom Constraints/Scheduling Logic/should schedule incompatible pods to the different node",
			pools: []*v1.NodePool{upstreamPool(testKey("test-value", "another-value"))},
			pods:  []*corev1.Pod{upod("a", nodeRequirements(nsr("test-key", in, "test-value"))), upod("b", nodeRequirements(nsr("test-key", in, "another-value")))},
			want: func(r scenarioResult) {
				r.hasLabel("a", "test-key", "test-value")
				r.hasLabel("b", "test-key", "another-value")
				if r.nodes() != 2 {
					r.t.Errorf("pods on %d nodes, want 2", r.nodes())
				}
			}},
		{name: "Exists doesn't widen In", from: suite + "Custom Constraints/Scheduling Logic/Exists operator should not overwrite the existing value",
			pods: upods(1, "p", nodeRequirements(nsr(zone, in, "non-existent-zone"), nsr(zone, exists))), want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "final required term not relaxed", from: suite + "Preferential Fallback/Required/should not relax the final term",
			pools: []*v1.NodePool{upstreamPool(poolRequirements(req(zone, in, "test-zone-1"), req(v1.LabelInstanceType, in, "default-instance-type")))},
			pods:  upods(1, "p", nodeRequirements(nsr(zone, in, "invalid"))), want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "required terms relaxed in order", from: suite + "Preferential Fallback/Required/should relax multiple terms",
			pods: upods(1, "p", requireTerms([]corev1.NodeSelectorRequirement{nsr(zone, in, "invalid")}, []corev1.NodeSelectorRequirement{nsr(zone, in, "invalid")},
				[]corev1.NodeSelectorRequirement{nsr(zone, in, "test-zone-1")}, []corev1.NodeSelectorRequirement{nsr(zone, in, "test-zone-2")})),
			want: func(r scenarioResult) { r.hasLabel("p-0", zone, "test-zone-1") }},
		{name: "all preferences relaxed", from: suite + "Preferential Fallback/Preferred/should relax all terms",
			pods: upods(1, "p", nodePreferences(nsr(zone, in, "invalid")), nodePreferences(nsr(v1.LabelInstanceType, in, "invalid"))),
			want: func(r scenarioResult) { r.scheduled("p-0") }},
		{name: "preference conflicting with requirement", from: suite + "Preferential Fallback/Preferred/should schedule even if preference is conflicting with requirement",
			pods: upods(1, "p", nodePreferences(nsr(zone, notIn, "test-zone-3")), nodeRequirements(nsr(zone, in, "test-zone-3"))),
			want: func(r scenarioResult) { r.hasLabel("p-0", zone, "test-zone-3") }},
		{name: "arm instance type excluded by amd64 pool", from: suite + "Instance Type Compatibility/should exclude instance types that are not supported by the pod constraints (node affinity/instance type)",
			pools: []*v1.NodePool{upstreamPool(poolRequirements(req(v1.LabelArch, in, "amd64")))},
			pods:  upods(1, "p", nodeRequirements(nsr(v1.LabelInstanceType, in, "arm-instance-type"))), want: func(r scenarioResult) { r.pending("p-0") }},
		{name: "provider label filters types", from: suite + "Instance Type Compatibility/Provider Specific Labels/should filter instance types that match labels",
			types: upstreamInstanceTypes(5), pods: []*corev1.Pod{upod("large", nodeSelector(labelSize, "large")), upod("small", nodeSelector(labelSize, "small"))},
			want: func(r scenarioResult) {
				r.hasLabel("large", v1.LabelInstanceType, "fake-it-4")
				r.hasLabel("small", v1.LabelInstanceType, "fake-it-0")
			}},
		{name: "incompatible provider labels", from: suite + "Instance Type Compatibility/Provider Specific Labels/should not schedule with incompatible labels",
			types: upstreamInstanceTypes(5), pods: []*corev1.Pod{upod("a", nodeSelector(labelSize, "large", v1.LabelInstanceType, "fake-it-0")),
				upod("b", nodeSelector(labelSize, "small", v1.LabelInstanceType, "fake-it-4"))},
			want: func(r scenarioResult) { r.pending("a", "b") }},
		{name: "optional provider label", from: suite + "Instance Type Compatibility/Provider Specific Labels/should schedule optional labels",
			types: upstreamInstanceTypes(5), pods: upods(1, "p", nodeRequirements(nsr(labelSpecial, exists))),
			want: func(r scenarioResult) {
				r.hasLabel("p-0", labelSpecial, "optional")
				r.hasLabel("p-0", v1.LabelInstanceType, "fake-it-4")
			}},
		{name: "optional provider label disallowed", from: suite + "Instance Type Compatibility/Provider Specific Labels/should schedule without optional labels if disallowed",
			types: upstreamInstanceTypes(5), pods: upods(1, "p", nodeRequirements(nsr(labelSpecial, doesNotExist))), want: func(r scenarioResult) {
				r.scheduled("p-0")
				if _, ok := r.label("p-0", labelSpecial); ok {
					r.t.Error("node has the optional label")
				}
			}},
	})
}
