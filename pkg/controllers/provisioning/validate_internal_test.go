package provisioning

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestValidatePod holds provisioning's pod checks to Karpenter v1.14.1's (Provisioner.Validate in
// pkg/controllers/provisioning/provisioner.go and ValidateRequirement in pkg/apis/v1/nodeclaim_validation.go):
// each verdict below is what that code gives for the pod.
func TestValidatePod(t *testing.T) {
	required := func(terms ...corev1.NodeSelectorTerm) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
		}
	}
	expr := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	selector := func(kv ...string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				p.Spec.NodeSelector[kv[i]] = kv[i+1]
			}
		}
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*corev1.Pod)
		ignored bool
		avoids  bool // the error is ErrAvoidsManagedNodes (no event upstream)
	}{
		{name: "plain pod", mutate: func(*corev1.Pod) {}},
		{name: "well-known labels", mutate: selector("topology.kubernetes.io/zone", "us-east-1a", "karpenter.sh/capacity-type", "spot", "kubernetes.io/arch", "arm64")},
		{name: "selects a nodepool", mutate: selector("karpenter.sh/nodepool", "default")},
		{name: "custom label", mutate: selector("example.com/team", "a")},
		{name: "other kubernetes.io label", mutate: selector("node.kubernetes.io/lifecycle", "x")},
		{name: "deprecated beta zone label", mutate: selector("failure-domain.beta.kubernetes.io/zone", "us-east-1a")},
		{name: "avoids managed nodes (required)", mutate: required(expr("karpenter.sh/nodepool", corev1.NodeSelectorOpDoesNotExist)), ignored: true, avoids: true},
		{name: "avoids managed nodes (heaviest preference)", mutate: func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
				{Weight: 1, Preference: expr("example.com/a", corev1.NodeSelectorOpExists)},
				{Weight: 50, Preference: expr("karpenter.sh/nodepool", corev1.NodeSelectorOpDoesNotExist)},
			}}}
		}, ignored: true, avoids: true},
		{name: "nodepool DoesNotExist only in a lighter preference", mutate: func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
				{Weight: 1, Preference: expr("karpenter.sh/nodepool", corev1.NodeSelectorOpDoesNotExist)},
				{Weight: 50, Preference: expr("example.com/a", corev1.NodeSelectorOpExists)},
			}}}
		}},
		{name: "nodepool DoesNotExist only in the second required term", mutate: required(expr("example.com/a", corev1.NodeSelectorOpExists), expr("karpenter.sh/nodepool", corev1.NodeSelectorOpDoesNotExist))},
		{name: "hostname selector", mutate: selector("kubernetes.io/hostname", "node-1"), ignored: true},
		{name: "karpenter.sh domain label", mutate: selector("karpenter.sh/initialized", "true"), ignored: true},
		{name: "subdomain of karpenter.sh", mutate: selector("team.karpenter.sh/x", "y"), ignored: true},
		// Karpenter's AWS provider adds karpenter.k8s.aws to the restricted domains and registers its instance
		// labels (and topology.k8s.aws/zone-id) as well known, with two known tenancy values.
		{name: "well-known AWS labels", mutate: selector("karpenter.k8s.aws/instance-family", "m5", "karpenter.k8s.aws/instance-cpu", "4", "topology.k8s.aws/zone-id", "use1-az1")},
		{name: "well-known AWS capacity reservation label", mutate: required(expr("karpenter.k8s.aws/capacity-reservation-id", corev1.NodeSelectorOpIn, "cr-0123"))},
		{name: "AWS label that isn't well known", mutate: selector("karpenter.k8s.aws/instance-colour", "red"), ignored: true},
		{name: "AWS node class label", mutate: selector("karpenter.k8s.aws/ec2nodeclass", "default"), ignored: true},
		{name: "AWS label that isn't well known (affinity)", mutate: required(expr("karpenter.k8s.aws/team", corev1.NodeSelectorOpExists)), ignored: true},
		{name: "subdomain of karpenter.k8s.aws", mutate: selector("team.karpenter.k8s.aws/x", "y"), ignored: true},
		{name: "domain merely ending in karpenter.sh", mutate: selector("example-karpenter.sh/x", "y")},
		{name: "domain merely ending in karpenter.k8s.aws", mutate: selector("examplekarpenter.k8s.aws/x", "y")},
		{name: "known tenancy", mutate: selector("karpenter.k8s.aws/instance-tenancy", "dedicated")},
		{name: "unknown tenancy", mutate: selector("karpenter.k8s.aws/instance-tenancy", "host"), ignored: true},
		{name: "unknown tenancy with NotIn", mutate: required(expr("karpenter.k8s.aws/instance-tenancy", corev1.NodeSelectorOpNotIn, "host"))},
		{name: "unknown capacity type", mutate: selector("karpenter.sh/capacity-type", "preemptible"), ignored: true},
		{name: "one known capacity type among unknown", mutate: required(expr("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, "preemptible", "spot"))},
		{name: "invalid value", mutate: selector("example.com/team", "a b"), ignored: true},
		{name: "In without values", mutate: required(expr("example.com/team", corev1.NodeSelectorOpIn)), ignored: true},
		{name: "Gt with a word", mutate: required(expr("example.com/size", corev1.NodeSelectorOpGt, "big")), ignored: true},
		{name: "Gt with a number", mutate: required(expr("example.com/size", corev1.NodeSelectorOpGt, "4"))},
		{name: "matchFields", mutate: required(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n"}}}}), ignored: true},
		{name: "a bad second required term", mutate: required(expr("example.com/a", corev1.NodeSelectorOpExists), expr("kubernetes.io/hostname", corev1.NodeSelectorOpIn, "n")), ignored: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{}
			tc.mutate(pod)
			err := validatePod(pod)
			if (err != nil) != tc.ignored {
				t.Fatalf("validatePod = %v, want ignored %v", err, tc.ignored)
			}
			if errors.Is(err, ErrAvoidsManagedNodes) != tc.avoids {
				t.Errorf("validatePod = %v, want ErrAvoidsManagedNodes %v", err, tc.avoids)
			}
		})
	}
}
