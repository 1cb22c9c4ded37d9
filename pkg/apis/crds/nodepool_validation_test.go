package crds_test

import (
	"context"
	"strings"
	"testing"

	karpv1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

const nodePoolBase = `
apiVersion: karpenter.sh/v1
kind: NodePool
spec:
  template:
    spec:
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`

// requirement returns a merge patch that sets the pool's only requirement.
func requirement(r string) string {
	return "spec: {template: {spec: {requirements: [" + r + "]}}}"
}

// templateLabels returns a merge patch that sets the template's labels.
func templateLabels(l string) string {
	return "spec: {template: {metadata: {labels: {" + l + "}}}}"
}

func TestNodePoolValidation(t *testing.T) {
	runVerdicts(t, nodePoolBase, []verdict{
		{name: "minimal pool", patch: ""},
		{name: "weight 1", patch: "spec: {weight: 1}"},
		{name: "weight 100", patch: "spec: {weight: 100}"},
		{name: "weight 0", patch: "spec: {weight: 0}", reject: "should be greater than or equal to 1"},
		{name: "weight 101", patch: "spec: {weight: 101}", reject: "should be less than or equal to 100"},
		{name: "policy Balanced", patch: "spec: {disruption: {consolidationPolicy: Balanced, consolidateAfter: 0s}}"},
		{name: "policy WhenEmpty", patch: "spec: {disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 30s}}"},
		{name: "policy from v1beta1", patch: "spec: {disruption: {consolidationPolicy: WhenUnderutilized}}", reject: "Unsupported value"},
		{name: "disruption without consolidateAfter", patch: "spec: {disruption: {consolidationPolicy: WhenEmpty}}", reject: "spec.disruption.consolidateAfter: Required value"},
		{name: "consolidateAfter Never", patch: "spec: {disruption: {consolidateAfter: Never}}"},
		{name: "consolidateAfter compound", patch: "spec: {disruption: {consolidateAfter: 1h30m}}"},
		{name: "consolidateAfter days", patch: "spec: {disruption: {consolidateAfter: 1d}}", reject: "should match"},
		{name: "consolidateAfter negative", patch: "spec: {disruption: {consolidateAfter: -1s}}", reject: "should match"},
		{name: "expireAfter Never", patch: "spec: {template: {spec: {expireAfter: Never}}}"},
		{name: "expireAfter without unit", patch: "spec: {template: {spec: {expireAfter: '10'}}}", reject: "should match"},
		{name: "terminationGracePeriod", patch: "spec: {template: {spec: {terminationGracePeriod: 48h}}}"},
		{name: "terminationGracePeriod Never", patch: "spec: {template: {spec: {terminationGracePeriod: Never}}}", reject: "should match"},
		{name: "budget percent", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [{nodes: '100%'}]}}"},
		{name: "budget count", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [{nodes: '5'}]}}"},
		{name: "budget over 100%", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [{nodes: '101%'}]}}", reject: "should match"},
		{name: "budget negative", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [{nodes: '-1'}]}}", reject: "should match"},
		{name: "budget words", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [{nodes: 'all'}]}}", reject: "should match"},
		{name: "budget schedule without duration", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [{nodes: '0', schedule: '@daily'}]}}", reject: "'schedule' must be set with 'duration'"},
		{name: "budget duration without schedule", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [{nodes: '0', duration: 10m}]}}", reject: "'schedule' must be set with 'duration'"},
		{name: "budget macro schedule", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [{nodes: '0', schedule: '@daily', duration: 10m}]}}"},
		{name: "budget cron schedule", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [{nodes: '0', schedule: '0 9 * * mon-fri', duration: 8h}]}}"},
		{name: "budget four-field cron", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [{nodes: '0', schedule: '0 9 * *', duration: 8h}]}}", reject: "should match"},
		{name: "budget hours and minutes", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [{nodes: '0', schedule: '@hourly', duration: 1h30m}]}}"},
		{name: "budget seconds", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [{nodes: '0', schedule: '@hourly', duration: 30s}]}}", reject: "should match"},
		{name: "budget reasons", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [{nodes: '1', reasons: [Drifted, Empty, Underutilized]}]}}"},
		{name: "budget unknown reason", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [{nodes: '1', reasons: [Expired]}]}}", reject: "Unsupported value"},
		{name: "51 budgets", patch: "spec: {disruption: {consolidateAfter: 5m, budgets: [" + strings.Repeat("{nodes: '1'},", 50) + "{nodes: '1'}]}}", reject: "must have at most 50 items"},
		{name: "In without values", patch: requirement("{key: example.com/team, operator: In}"), reject: "requirements with operator 'In' must have a value defined"},
		{name: "In with empty values", patch: requirement("{key: example.com/team, operator: In, values: []}"), reject: "requirements with operator 'In' must have a value defined"},
		{name: "NotIn", patch: requirement("{key: example.com/team, operator: NotIn, values: [a]}")},
		{name: "Exists", patch: requirement("{key: example.com/team, operator: Exists}")},
		{name: "DoesNotExist", patch: requirement("{key: example.com/team, operator: DoesNotExist}")},
		{name: "Gt integer", patch: requirement("{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ['3']}")},
		{name: "Gte integer", patch: requirement("{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ['4']}")},
		{name: "Lte integer", patch: requirement("{key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ['64']}")},
		{name: "Lt two values", patch: requirement("{key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ['3', '4']}"), reject: "must have a single positive integer value"},
		{name: "Gt negative", patch: requirement("{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ['-1']}"), reject: anyError},
		{name: "Gt not a number", patch: requirement("{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: [many]}"), reject: anyError},
		{name: "Lte without values", patch: requirement("{key: karpenter.k8s.aws/instance-cpu, operator: Lte}"), reject: "must have a single positive integer value"},
		{name: "unknown operator", patch: requirement("{key: example.com/team, operator: Matches, values: [a]}"), reject: "Unsupported value"},
		{name: "minValues met", patch: requirement("{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5], minValues: 2}")},
		{name: "minValues above values", patch: requirement("{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5], minValues: 3}"), reject: "requirements with 'minValues' must have at least that many values specified in the 'values' field"},
		{name: "minValues with Exists", patch: requirement("{key: karpenter.k8s.aws/instance-family, operator: Exists, minValues: 10}")},
		{name: "minValues zero", patch: requirement("{key: karpenter.k8s.aws/instance-family, operator: Exists, minValues: 0}"), reject: "should be greater than or equal to 1"},
		{name: "minValues 51", patch: requirement("{key: karpenter.k8s.aws/instance-family, operator: Exists, minValues: 51}"), reject: "should be less than or equal to 50"},
		{name: "101 requirements", patch: "spec: {template: {spec: {requirements: [" + strings.Repeat("{key: example.com/a, operator: Exists},", 100) + "{key: example.com/a, operator: Exists}]}}}", reject: "must have at most 100 items"},
		{name: "requirement on nodepool label", patch: requirement("{key: karpenter.sh/nodepool, operator: In, values: [a]}"), reject: `label "karpenter.sh/nodepool" is restricted`},
		{name: "requirement on capacity type", patch: requirement("{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}")},
		{name: "requirement in karpenter.sh domain", patch: requirement("{key: karpenter.sh/team, operator: Exists}"), reject: `label domain "karpenter.sh" is restricted`},
		{name: "requirement on hostname", patch: requirement("{key: kubernetes.io/hostname, operator: In, values: [a]}"), reject: `label "kubernetes.io/hostname" is restricted`},
		// Karpenter v1.14 restricts only the karpenter.sh and karpenter.k8s.aws domains and kubernetes.io/hostname.
		{name: "requirement in kubernetes.io domain", patch: requirement("{key: kubernetes.io/team, operator: Exists}")},
		{name: "requirement in k8s.io domain", patch: requirement("{key: k8s.io/team, operator: Exists}")},
		{name: "requirement in sub-domain of karpenter.sh", patch: requirement("{key: team.karpenter.sh/a, operator: Exists}"), reject: `label domain "karpenter.sh" is restricted`},
		{name: "requirement on AWS placement group", patch: requirement("{key: karpenter.k8s.aws/placement-group-id, operator: Exists}")},
		{name: "requirement in kops.k8s.io domain", patch: requirement("{key: kops.k8s.io/instancegroup, operator: Exists}")},
		{name: "requirement on instance type", patch: requirement("{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}")},
		{name: "requirement on beta arch", patch: requirement("{key: beta.kubernetes.io/arch, operator: In, values: [arm64]}")},
		{name: "requirement on zone", patch: requirement("{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}")},
		{name: "requirement in node-restriction domain", patch: requirement("{key: node-restriction.kubernetes.io/team, operator: Exists}")},
		{name: "requirement on custom label", patch: requirement("{key: example.com/team, operator: In, values: [platform]}")},
		{name: "requirement on AWS label", patch: requirement("{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}")},
		{name: "requirement on unknown AWS label", patch: requirement("{key: karpenter.k8s.aws/instance-colour, operator: Exists}"), reject: `label domain "karpenter.k8s.aws" is restricted`},
		{name: "requirement key malformed", patch: requirement("{key: -team, operator: Exists}"), reject: "should match"},
		{name: "requirement key with upper-case domain", patch: requirement("{key: Example.com/team, operator: Exists}"), reject: "should match"},
		// Karpenter's CRD puts the label-value constraints on the values list, where they check nothing.
		{name: "requirement value too long", patch: requirement("{key: example.com/team, operator: In, values: [" + strings.Repeat("a", 64) + "]}")},
		{name: "requirement value with space", patch: requirement("{key: example.com/team, operator: In, values: ['a b']}")},
		{name: "template label", patch: templateLabels("team: platform")},
		{name: "template capacity-type label", patch: templateLabels("karpenter.sh/capacity-type: spot")},
		{name: "template nodepool label", patch: templateLabels("karpenter.sh/nodepool: x"), reject: `label "karpenter.sh/nodepool" is restricted`},
		{name: "template hostname label", patch: templateLabels("kubernetes.io/hostname: x"), reject: `label "kubernetes.io/hostname" is restricted`},
		{name: "template karpenter.sh label", patch: templateLabels("karpenter.sh/team: x"), reject: `label domain "karpenter.sh" is restricted`},
		{name: "template kubernetes.io label", patch: templateLabels("kubernetes.io/custom: x")},
		{name: "template k8s.io label", patch: templateLabels("k8s.io/custom: x")},
		{name: "template karpenter.k8s.aws label", patch: templateLabels("karpenter.k8s.aws/team: x"), reject: `label domain "karpenter.k8s.aws" is restricted`},
		{name: "template label key not qualified", patch: templateLabels("'bad key': x")},
		{name: "template node.kubernetes.io label", patch: templateLabels("node.kubernetes.io/role: worker")},
		{name: "template label value with space", patch: templateLabels("team: 'a b'"), reject: "should match"},
		{name: "template annotations", patch: "spec: {template: {metadata: {annotations: {example.com/owner: 'anything at all'}}}}"},
		{name: "nodeClassRef group with version", patch: "spec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws/v1}}}}", reject: "should match"},
		{name: "nodeClassRef empty kind", patch: "spec: {template: {spec: {nodeClassRef: {kind: ''}}}}", reject: "kind may not be empty"},
		{name: "nodeClassRef empty name", patch: "spec: {template: {spec: {nodeClassRef: {name: ''}}}}", reject: "name may not be empty"},
		{name: "nodeClassRef without group", patch: "spec: {template: {spec: {nodeClassRef: {group: null}}}}", reject: "Required value"},
		{name: "no nodeClassRef", patch: "spec: {template: {spec: {nodeClassRef: null}}}", reject: "Required value"},
		{name: "no requirements", patch: "spec: {template: {spec: {requirements: null}}}", reject: "Required value"},
		{name: "limits", patch: "spec: {limits: {cpu: '1000', memory: 1000Gi, nvidia.com/gpu: '8', nodes: '10'}}"},
		{name: "limit not a quantity", patch: "spec: {limits: {cpu: lots}}", reject: anyError},
		{name: "static pool", patch: "spec: {replicas: 3, limits: {nodes: '5'}}"},
		{name: "static pool with weight", patch: "spec: {replicas: 3, weight: 10}", reject: "'weight' is not supported on static NodePools"},
		{name: "static pool with cpu limit", patch: "spec: {replicas: 3, limits: {cpu: '10'}}", reject: "only 'limits.nodes' is supported on static NodePools"},
		{name: "negative replicas", patch: "spec: {replicas: -1}", reject: "should be greater than or equal to 0"},
		{name: "taints and startup taints", patch: "spec: {template: {spec: {taints: [{key: gpu, value: 'true', effect: NoSchedule}], startupTaints: [{key: cni, effect: NoExecute}]}}}"},
		{name: "taint PreferNoSchedule", patch: "spec: {template: {spec: {taints: [{key: example.com/gpu, effect: PreferNoSchedule}]}}}"},
		{name: "taint unknown effect", patch: "spec: {template: {spec: {taints: [{key: gpu, effect: NoScheduleEver}]}}}", reject: "Unsupported value"},
		{name: "startup taint unknown effect", patch: "spec: {template: {spec: {startupTaints: [{key: cni, effect: Sometimes}]}}}", reject: "Unsupported value"},
		{name: "taint empty key", patch: "spec: {template: {spec: {taints: [{key: '', effect: NoSchedule}]}}}", reject: anyError},
		{name: "taint key malformed", patch: "spec: {template: {spec: {taints: [{key: '-gpu', effect: NoSchedule}]}}}", reject: "should match"},
		{name: "startup taint value with space", patch: "spec: {template: {spec: {startupTaints: [{key: cni, value: 'not ready', effect: NoSchedule}]}}}", reject: "should match"},
	})
}

func TestNodePoolDefaults(t *testing.T) {
	ctx := context.Background()
	obj := manifest(t, nodePoolBase, "")
	obj.SetName("defaults")
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, obj) })
	np := &karpv1.NodePool{}
	if err := env.Client.Get(ctx, keyOf(obj), np); err != nil {
		t.Fatal(err)
	}
	d := np.Spec.Disruption
	if d.ConsolidationPolicy != karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized {
		t.Errorf("consolidationPolicy = %q, want WhenEmptyOrUnderutilized", d.ConsolidationPolicy)
	}
	if d.ConsolidateAfter.String() != "0s" {
		t.Errorf("consolidateAfter = %s, want 0s", d.ConsolidateAfter)
	}
	if len(d.Budgets) != 1 || d.Budgets[0].Nodes != "10%" {
		t.Errorf("budgets = %+v, want [{nodes: 10%%}]", d.Budgets)
	}
	if got := np.Spec.Template.Spec.ExpireAfter.String(); got != "720h0m0s" {
		t.Errorf("expireAfter = %s, want 720h", got)
	}
}

func TestNodePoolUpdateRules(t *testing.T) {
	tests := []struct {
		name, create, change, reject string
	}{
		{name: "group immutable", change: "spec: {template: {spec: {nodeClassRef: {group: example.com}}}}", reject: "nodeClassRef.group is immutable"},
		{name: "kind immutable", change: "spec: {template: {spec: {nodeClassRef: {kind: OtherNodeClass}}}}", reject: "nodeClassRef.kind is immutable"},
		{name: "name mutable", change: "spec: {template: {spec: {nodeClassRef: {name: other}}}}"},
		{name: "dynamic to static", change: "spec: {replicas: 2}", reject: "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes"},
		{name: "static to dynamic", create: "spec: {replicas: 2}", change: "spec: {replicas: null}", reject: "Cannot transition NodePool"},
		{name: "scale static pool", create: "spec: {replicas: 2}", change: "spec: {replicas: 5}"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := update(t, nodePoolBase, "update-"+string(rune('a'+i)), tc.create, tc.change)
			checkVerdict(t, err, tc.reject)
		})
	}
}
