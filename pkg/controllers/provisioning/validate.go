package provisioning

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// ErrAvoidsManagedNodes is why a pod that requires karpenter.sh/nodepool not to exist (for example the
// controller's own replicas) is left alone: no node Lathe launches could ever take it.
var ErrAvoidsManagedNodes = fmt.Errorf("configured to not run on a Karpenter provisioned node (requirement %s %s)",
	v1.NodePoolLabelKey, corev1.NodeSelectorOpDoesNotExist)

// IgnoredPod is a pending pod provisioning leaves alone, and why.
type IgnoredPod struct {
	Pod *corev1.Pod
	Err error
}

// splitIgnored separates the pods provisioning must leave alone from the others, as Karpenter's provisioner
// does before it simulates: a pod that avoids Lathe's nodes, and a pod whose node selector or required node
// affinity Karpenter refuses (restricted labels, malformed keys or values, matchFields, operators it does
// not know, well-known values that cannot exist).
func splitIgnored(pods []*corev1.Pod) (kept []*corev1.Pod, ignored []IgnoredPod) {
	for _, pod := range pods {
		if err := validatePod(pod); err != nil {
			ignored = append(ignored, IgnoredPod{Pod: pod, Err: err})
			continue
		}
		kept = append(kept, pod)
	}
	return kept, ignored
}

// validatePod returns why provisioning must leave the pod alone, nil when it may place it.
func validatePod(pod *corev1.Pod) error {
	if avoidsManagedNodes(pod) {
		return ErrAvoidsManagedNodes
	}
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(pod.Spec.NodeSelector)) {
		errs = append(errs, validateRequirement(key, corev1.NodeSelectorOpIn, []string{pod.Spec.NodeSelector[key]}))
	}
	for _, term := range requiredTerms(pod) {
		if len(term.MatchFields) > 0 {
			errs = append(errs, errors.New("node selector term with matchFields is not supported"))
		}
		for _, r := range term.MatchExpressions {
			errs = append(errs, validateRequirement(r.Key, r.Operator, r.Values))
		}
	}
	return errors.Join(errs...)
}

// avoidsManagedNodes reports whether the requirements the pod is first planned with (its node selector, its
// heaviest preferred node affinity term and its first required term, as Karpenter reads them) ask for
// karpenter.sh/nodepool not to exist.
func avoidsManagedNodes(pod *corev1.Pod) bool {
	if _, ok := pod.Spec.NodeSelector[v1.NodePoolLabelKey]; ok {
		return false
	}
	var terms [][]corev1.NodeSelectorRequirement
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		if preferred := a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution; len(preferred) > 0 {
			heaviest := slices.MaxFunc(preferred, func(x, y corev1.PreferredSchedulingTerm) int { return int(x.Weight - y.Weight) })
			terms = append(terms, heaviest.Preference.MatchExpressions)
		}
		if required := requiredTerms(pod); len(required) > 0 {
			terms = append(terms, required[0].MatchExpressions)
		}
	}
	for _, term := range terms {
		for _, r := range term {
			if r.Key == v1.NodePoolLabelKey && r.Operator == corev1.NodeSelectorOpDoesNotExist {
				return true
			}
		}
	}
	return false
}

// requiredTerms returns the pod's required node affinity terms.
func requiredTerms(pod *corev1.Pod) []corev1.NodeSelectorTerm {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
}

// supportedOperators are the operators a pod's requirement may use.
var supportedOperators = []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn,
	corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt,
	v1.NodeSelectorOpGte, v1.NodeSelectorOpLte}

// knownValues are the values a well-known label can take; an In requirement naming none of them cannot be
// met. The AWS provider registers the tenancy values as Karpenter's does.
var knownValues = map[string][]string{
	v1.CapacityTypeLabelKey:    {v1.CapacityTypeOnDemand, v1.CapacityTypeSpot, v1.CapacityTypeReserved},
	awsv1.LabelInstanceTenancy: {"dedicated", "default"},
}

// validateRequirement checks one requirement of a pod the way Karpenter checks a requirement: a known
// operator, a key that is neither restricted nor malformed, valid values, a value for In, and one
// non-negative integer for the comparison operators.
func validateRequirement(key string, op corev1.NodeSelectorOperator, values []string) error {
	key = v1.NormalizeLabelKey(key)
	var errs []error
	if !slices.Contains(supportedOperators, op) {
		errs = append(errs, fmt.Errorf("key %s has an unsupported operator %s", key, op))
	}
	if err := restrictedForPods(key); err != nil {
		errs = append(errs, err)
	}
	if known, ok := knownValues[key]; ok && op == corev1.NodeSelectorOpIn && len(values) > 0 &&
		!slices.ContainsFunc(values, func(v string) bool { return slices.Contains(known, v) }) {
		errs = append(errs, fmt.Errorf("no valid values found in %v for %s, expected one of: %v", values, key, known))
	}
	for _, e := range validation.IsQualifiedName(key) {
		errs = append(errs, fmt.Errorf("key %s is not a qualified name, %s", key, e))
	}
	for _, value := range values {
		for _, e := range validation.IsValidLabelValue(value) {
			errs = append(errs, fmt.Errorf("invalid value %s for key %s, %s", value, key, e))
		}
	}
	if op == corev1.NodeSelectorOpIn && len(values) == 0 {
		errs = append(errs, fmt.Errorf("key %s with operator %s must have a value defined", key, op))
	}
	switch op {
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte:
		if len(values) != 1 || !nonNegativeInteger(values[0]) {
			errs = append(errs, fmt.Errorf("key %s with operator %s must have a single positive integer value", key, op))
		}
	}
	return errors.Join(errs...)
}

// restrictedPodLabelDomains are the domains (and their subdomains) whose labels a pod may not select on,
// apart from the well-known ones: Karpenter's karpenter.sh and the AWS provider's karpenter.k8s.aws, which
// Karpenter's AWS provider adds to the list. Lathe's simulated provider launches from the same EC2NodeClass
// and catalog, so the same rule holds for it.
var restrictedPodLabelDomains = []string{v1.Group, awsv1.Group}

// wellKnownForPods are the label keys a pod may always select on (scheduling.WellKnownLabels).
var wellKnownForPods = scheduling.WellKnownLabels()

// restrictedForPods refuses the label keys a pod may not select on, as Karpenter's provisioner does: the
// node's hostname (no node Lathe launches can be given one in advance) and the restricted domains apart
// from their well-known labels. Unlike a NodePool template, a pod may select karpenter.sh/nodepool. The
// domain of the key must equal a restricted domain or end in "." and one: example-karpenter.sh/x is allowed.
func restrictedForPods(key string) error {
	if wellKnownForPods[key] {
		return nil
	}
	if key == v1.LabelHostname {
		return fmt.Errorf("using label %s is not allowed as it might interfere with provisioning: the node's name is not known in advance", key)
	}
	domain, _, found := strings.Cut(key, "/")
	if !found {
		return nil
	}
	for _, restricted := range restrictedPodLabelDomains {
		if domain == restricted || strings.HasSuffix(domain, "."+restricted) {
			return fmt.Errorf("using label %s is not allowed as it might interfere with provisioning: label domain %q is restricted apart from its well-known labels", key, restricted)
		}
	}
	return nil
}

func nonNegativeInteger(value string) bool {
	n, err := strconv.Atoi(value)
	return err == nil && n >= 0
}
