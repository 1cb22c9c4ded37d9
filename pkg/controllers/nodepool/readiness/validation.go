package readiness

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// validate returns what is wrong with the pool's spec, in a stable order; nil when nothing is.
func validate(np *v1.NodePool) []string {
	var problems []string
	problems = append(problems, syntaxProblems(&np.Spec.Template)...)
	problems = append(problems, requirementProblems(&np.Spec.Template)...)
	problems = append(problems, budgetProblems(np.Spec.Disruption.Budgets)...)
	return problems
}

// syntaxProblems checks what the CRD lets through, as Karpenter's does, and Karpenter's runtime validation
// then refuses: template label keys that are not qualified names, and label values and requirement keys and
// values that are not valid label keys and values.
func syntaxProblems(tmpl *v1.NodeClaimTemplate) []string {
	var problems []string
	for _, key := range slices.Sorted(maps.Keys(tmpl.Labels)) {
		for _, e := range validation.IsQualifiedName(key) {
			problems = append(problems, fmt.Sprintf("invalid label key %q: %s", key, e))
		}
		for _, e := range validation.IsValidLabelValue(tmpl.Labels[key]) {
			problems = append(problems, fmt.Sprintf("invalid value %q for label %s: %s", tmpl.Labels[key], key, e))
		}
	}
	for _, r := range tmpl.Spec.Requirements {
		for _, e := range validation.IsQualifiedName(r.Key) {
			problems = append(problems, fmt.Sprintf("invalid requirement key %q: %s", r.Key, e))
		}
		for _, value := range r.Values {
			for _, e := range validation.IsValidLabelValue(value) {
				problems = append(problems, fmt.Sprintf("invalid value %q for requirement key %s: %s", value, r.Key, e))
			}
		}
	}
	return problems
}

// requirementProblems checks the template's requirements and labels together: each key must leave some
// value (or absence) a node can have, minValues must still be reachable after the requirements on a key are
// intersected, and the template's labels must satisfy the requirements on their keys.
func requirementProblems(tmpl *v1.NodeClaimTemplate) []string {
	var problems []string
	if err := scheduling.ValidateNodePoolKeys(tmpl.Spec.Requirements); err != nil {
		problems = append(problems, err.Error())
	}
	reqs, err := scheduling.FromNodePoolRequirements(tmpl.Spec.Requirements)
	if err != nil {
		return append(problems, fmt.Sprintf("invalid requirements: %v", err))
	}
	for _, key := range reqs.Keys() {
		r := reqs.Get(key)
		switch {
		case r.IsEmpty():
			problems = append(problems, fmt.Sprintf("requirements on key %q cannot be satisfied together (%s)", key, r))
		case r.MinValues != nil && r.IsFinite() && r.Len() < *r.MinValues:
			problems = append(problems, fmt.Sprintf("requirements on key %q allow %d values, fewer than minValues %d", key, r.Len(), *r.MinValues))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(tmpl.Labels)) {
		if restricted, why := v1.IsRestrictedLabel(key); restricted {
			problems = append(problems, why)
			continue
		}
		normalized := v1.NormalizeLabelKey(key)
		if reqs.Has(normalized) && !reqs.Get(normalized).Matches(tmpl.Labels[key], true) {
			problems = append(problems, fmt.Sprintf("label %s=%s does not satisfy requirement %s", key, tmpl.Labels[key], reqs.Get(normalized)))
		}
	}
	return problems
}

// budgetProblems checks that every budget schedule is valid cron, read in UTC as Karpenter does, and that
// schedule and duration come together.
func budgetProblems(budgets []v1.Budget) []string {
	var problems []string
	for i, b := range budgets {
		if (b.Schedule == nil) != (b.Duration == nil) {
			problems = append(problems, fmt.Sprintf("budget %d: schedule and duration must be set together", i))
		}
		if b.Schedule == nil {
			continue
		}
		if _, err := cron.ParseStandard("TZ=UTC " + *b.Schedule); err != nil {
			problems = append(problems, fmt.Sprintf("budget %d: invalid schedule %q: %v", i, *b.Schedule, err))
		}
	}
	return problems
}

// joinProblems makes one condition message of the problems.
func joinProblems(problems []string) string {
	return strings.Join(problems, "; ")
}
