package crds_test

import "testing"

const nodeClaimBase = `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  labels: {karpenter.sh/nodepool: default}
spec:
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [default]}
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge], minValues: 2}
  resources: {requests: {cpu: 1500m, memory: 2Gi, pods: '3'}}
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`

func TestNodeClaimValidation(t *testing.T) {
	runVerdicts(t, nodeClaimBase, []verdict{
		{name: "claim from a pool", patch: ""},
		{name: "claim with taints and expiry", patch: "spec: {taints: [{key: a, effect: NoSchedule}], expireAfter: Never, terminationGracePeriod: 1h}"},
		{name: "In without values", patch: "spec: {requirements: [{key: example.com/a, operator: In}]}", reject: "requirements with operator 'In' must have a value defined"},
		{name: "hostname requirement", patch: "spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [a]}]}", reject: `label "kubernetes.io/hostname" is restricted`},
		{name: "requirement in kubernetes.io domain", patch: "spec: {requirements: [{key: kubernetes.io/custom, operator: Exists}]}"},
		{name: "requirement on unknown AWS label", patch: "spec: {requirements: [{key: karpenter.k8s.aws/instance-colour, operator: Exists}]}", reject: `label domain "karpenter.k8s.aws" is restricted`},
		{name: "taint unknown effect", patch: "spec: {taints: [{key: a, effect: Never}]}", reject: "Unsupported value"},
		{name: "startup taint empty key", patch: "spec: {startupTaints: [{key: '', effect: NoSchedule}]}", reject: anyError},
		{name: "taint value malformed", patch: "spec: {taints: [{key: a, value: '-x', effect: NoExecute}]}", reject: "should match"},
		{name: "no nodeClassRef", patch: "spec: {nodeClassRef: null}", reject: "Required value"},
		{name: "bad expiry", patch: "spec: {expireAfter: 30d}", reject: "should match"},
	})
}

func TestNodeClaimSpecImmutable(t *testing.T) {
	err := update(t, nodeClaimBase, "immutable", "", "spec: {resources: {requests: {cpu: '2'}}}")
	checkVerdict(t, err, "spec is immutable")
}
