package checker

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// allowed is what one label key may be on a node: a finite set of values, or every value but some
// (anyValue), optionally within integer bounds, and whether the label may be absent. The checker keeps
// this model of its own so that a bug in the solver's requirement algebra can't hide itself here.
type allowed struct {
	anyValue bool
	values   map[string]bool // allowed values, or excluded ones when anyValue
	absent   bool
	min, max *int64 // inclusive integer bounds on the value
}

// labelRules maps label keys to what each may be; keys not listed are unconstrained.
type labelRules map[string]allowed

// has reports whether value v is allowed.
func (a allowed) has(v string) bool {
	if a.anyValue == a.values[v] {
		return false
	}
	if a.min == nil && a.max == nil {
		return true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && (a.min == nil || n >= *a.min) && (a.max == nil || n <= *a.max)
}

// finite lists the allowed values when they are finitely many (sorted), or reports false.
func (a allowed) finite() ([]string, bool) {
	if a.anyValue {
		return nil, false
	}
	var out []string
	for v := range a.values {
		if a.has(v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out, true
}

func set(values []string) map[string]bool {
	out := make(map[string]bool, len(values))
	for _, v := range values {
		out[v] = true
	}
	return out
}

// ruleOf reads one node selector expression; ok is false for an operator or value the API rejects.
func ruleOf(op corev1.NodeSelectorOperator, values []string) (allowed, bool) {
	bound := func() (*int64, bool) {
		if len(values) != 1 {
			return nil, false
		}
		n, err := strconv.ParseInt(values[0], 10, 64)
		return &n, err == nil
	}
	switch op {
	case corev1.NodeSelectorOpIn:
		return allowed{values: set(values)}, true
	case corev1.NodeSelectorOpNotIn:
		return allowed{anyValue: true, values: set(values), absent: true}, true
	case corev1.NodeSelectorOpExists:
		return allowed{anyValue: true}, true
	case corev1.NodeSelectorOpDoesNotExist:
		return allowed{absent: true}, true
	case corev1.NodeSelectorOpGt, v1.NodeSelectorOpGte:
		n, ok := bound()
		if ok && op == corev1.NodeSelectorOpGt {
			*n++
		}
		return allowed{anyValue: true, min: n}, ok
	case corev1.NodeSelectorOpLt, v1.NodeSelectorOpLte:
		n, ok := bound()
		if ok && op == corev1.NodeSelectorOpLt {
			*n--
		}
		return allowed{anyValue: true, max: n}, ok
	}
	return allowed{}, false
}

// both is what a and b allow together.
func both(a, b allowed) allowed {
	out := allowed{absent: a.absent && b.absent, min: a.min, max: a.max}
	if b.min != nil && (out.min == nil || *b.min > *out.min) {
		out.min = b.min
	}
	if b.max != nil && (out.max == nil || *b.max < *out.max) {
		out.max = b.max
	}
	switch {
	case a.anyValue && b.anyValue:
		out.anyValue, out.values = true, map[string]bool{}
		for v := range a.values {
			out.values[v] = true
		}
		for v := range b.values {
			out.values[v] = true
		}
	default:
		finite, other := a, b
		if a.anyValue {
			finite, other = b, a
		}
		out.values = map[string]bool{}
		for v := range finite.values {
			if finite.has(v) && other.has(v) {
				out.values[v] = true
			}
		}
	}
	return out
}

// add narrows the rules for key by a.
func (r labelRules) add(key string, a allowed) {
	key = v1.NormalizeLabelKey(key)
	if have, ok := r[key]; ok {
		a = both(have, a)
	}
	r[key] = a
}

// and is every rule of r and of o together, in a new map.
func (r labelRules) and(o labelRules) labelRules {
	out := labelRules{}
	for k, a := range r {
		out[k] = a
	}
	for k, a := range o {
		out.add(k, a)
	}
	return out
}

// rulesOfLabels pins every key to its value.
func rulesOfLabels(labels map[string]string) labelRules {
	out := labelRules{}
	for k, v := range labels {
		out.add(k, allowed{values: map[string]bool{v: true}})
	}
	return out
}

// rulesOf reads node selector expressions; ok is false when one is invalid.
func rulesOf(exprs []corev1.NodeSelectorRequirement) (labelRules, bool) {
	out := labelRules{}
	for _, e := range exprs {
		a, ok := ruleOf(e.Operator, e.Values)
		if !ok {
			return nil, false
		}
		out.add(e.Key, a)
	}
	return out, true
}

// rulesWithMinValues reads NodePool or NodeClaim requirements, keeping minValues per key.
func rulesWithMinValues(exprs []v1.NodeSelectorRequirementWithMinValues) (labelRules, map[string]int, bool) {
	out, minValues := labelRules{}, map[string]int{}
	for _, e := range exprs {
		a, ok := ruleOf(e.Operator, e.Values)
		if !ok {
			return nil, nil, false
		}
		out.add(e.Key, a)
		if e.MinValues != nil {
			minValues[v1.NormalizeLabelKey(e.Key)] = max(minValues[v1.NormalizeLabelKey(e.Key)], *e.MinValues)
		}
	}
	return out, minValues, true
}

// single returns the labels the rules fix to exactly one value.
func (r labelRules) single() map[string]string {
	out := map[string]string{}
	for k, a := range r {
		if values, ok := a.finite(); ok && len(values) == 1 && !a.absent {
			out[k] = values[0]
		}
	}
	return out
}

// overlap reports whether some node could meet both a and b for the key: a value both allow, or absence.
func overlap(a, b allowed) bool {
	if a.absent && b.absent {
		return true
	}
	c := both(a, b)
	if !c.anyValue {
		return len(c.values) > 0 && hasAny(c)
	}
	return c.min == nil || c.max == nil || *c.min <= *c.max // every value but finitely many remains
}

func hasAny(a allowed) bool {
	for v := range a.values {
		if a.has(v) {
			return true
		}
	}
	return false
}

// within reports whether every label value (or absence) a allows is one b allows too.
func within(a, b allowed) bool {
	if a.absent && !b.absent {
		return false
	}
	if values, ok := a.finite(); ok {
		for _, v := range values {
			if !b.has(v) {
				return false
			}
		}
		return true
	}
	if !b.anyValue {
		return false
	}
	for v := range b.values { // b's exclusions must be excluded by a too
		if a.has(v) {
			return false
		}
	}
	if b.min != nil && (a.min == nil || *a.min < *b.min) {
		return false
	}
	return b.max == nil || (a.max != nil && *a.max <= *b.max)
}
