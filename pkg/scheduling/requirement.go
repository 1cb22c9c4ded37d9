package scheduling

import (
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Requirement is the set of values one label key may take. It is a value type: every operation returns a new
// Requirement and never changes its operands.
//
// The set is either finite (the listed values) or a complement (every value except the listed ones). Integer
// bounds (from Gt, Lt, Gte, Lte) restrict the set to integer values in [lower, upper]. absentAllowed says
// whether a node without the label satisfies the requirement.
type Requirement struct {
	// Key is the normalised label key.
	Key string
	// MinValues, when set, asks for at least that many distinct values of Key among the instance types a
	// NodeClaim may launch.
	MinValues *int

	values []string // sorted, unique
	lower  int64    // inclusive
	upper  int64    // inclusive
	// The flags share one word (72 bytes a requirement instead of 88 with each flag beside its value): the
	// EC2 catalog holds about 42,000 requirements, and allocating their maps is most of loading it.
	complement    bool
	absentAllowed bool
	hasLower      bool
	hasUpper      bool
}

// NewRequirement builds a requirement from a node selector operator. The key is normalised (beta labels map to
// their stable names). Gt, Lt, Gte and Lte take exactly one integer value.
func NewRequirement(key string, operator corev1.NodeSelectorOperator, values ...string) (Requirement, error) {
	r := Requirement{Key: v1.NormalizeLabelKey(key)}
	switch operator {
	case corev1.NodeSelectorOpIn:
		r.values = sortedUnique(values)
	case corev1.NodeSelectorOpNotIn:
		r.complement, r.absentAllowed, r.values = true, true, sortedUnique(values)
	case corev1.NodeSelectorOpExists:
		r.complement = true
	case corev1.NodeSelectorOpDoesNotExist:
		r.absentAllowed = true
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte:
		if len(values) != 1 {
			return Requirement{}, &InvalidRequirementError{Key: key, Operator: string(operator), Reason: "needs exactly one value"}
		}
		bound, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return Requirement{}, &InvalidRequirementError{Key: key, Operator: string(operator), Reason: "value " + strconv.Quote(values[0]) + " is not an integer"}
		}
		r.complement = true
		switch operator {
		case corev1.NodeSelectorOpGt:
			r.hasLower, r.lower = true, saturatingAdd(bound, 1)
		case corev1.NodeSelectorOpLt:
			r.hasUpper, r.upper = true, saturatingAdd(bound, -1)
		case v1.NodeSelectorOpGte:
			r.hasLower, r.lower = true, bound
		default:
			r.hasUpper, r.upper = true, bound
		}
	default:
		return Requirement{}, &InvalidRequirementError{Key: key, Operator: string(operator), Reason: "unknown operator"}
	}
	return r.normalised(), nil
}

// NewSortedIn is NewRequirement(key, In, values...) for a key already normalised (as NormalizeLabelKey
// returns it) and values already sorted and unique, which it keeps without copying: the caller must not
// change them afterwards. Catalogs build tens of thousands of these.
func NewSortedIn(key string, values []string) Requirement {
	return Requirement{Key: key, values: values}
}

// MustRequirement is NewRequirement for values known to be valid (constants and tests). It panics on error.
func MustRequirement(key string, operator corev1.NodeSelectorOperator, values ...string) Requirement {
	r, err := NewRequirement(key, operator, values...)
	if err != nil {
		panic(err)
	}
	return r
}

// InvalidRequirementError reports a requirement that can't be built, for example Gt with a non-integer value.
type InvalidRequirementError struct {
	Key, Operator, Reason string
}

func (e *InvalidRequirementError) Error() string {
	return "invalid requirement " + strconv.Quote(e.Key) + " " + e.Operator + ": " + e.Reason
}

// Has reports whether a node with the label set to value satisfies the requirement.
func (r Requirement) Has(value string) bool {
	if r.hasLower || r.hasUpper {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || !r.inBounds(n) {
			return false
		}
	}
	_, found := slices.BinarySearch(r.values, value)
	return found != r.complement
}

// AllowsAbsent reports whether a node without the label satisfies the requirement.
func (r Requirement) AllowsAbsent() bool { return r.absentAllowed }

// Matches reports whether a node's label (present or not) satisfies the requirement.
func (r Requirement) Matches(value string, present bool) bool {
	if !present {
		return r.absentAllowed
	}
	return r.Has(value)
}

// Len is the number of label values the requirement allows, or math.MaxInt when unbounded. Absence is not
// counted.
func (r Requirement) Len() int {
	if !r.complement {
		return len(r.values)
	}
	if !r.hasLower || !r.hasUpper {
		return math.MaxInt
	}
	span := r.upper - r.lower + 1
	if span <= 0 || span > math.MaxInt32 {
		return max(0, int(min(span, math.MaxInt32)))
	}
	return int(span) - len(r.values) // values were trimmed to the bounds
}

// IsEmpty reports whether no node can satisfy the requirement: no value is allowed and absence isn't either.
func (r Requirement) IsEmpty() bool { return !r.absentAllowed && r.Len() == 0 }

// IsFinite reports whether the requirement lists its allowed values (In, or bounds that leave a finite range).
func (r Requirement) IsFinite() bool { return r.Len() != math.MaxInt }

// Values returns the allowed values of a finite requirement in order (integers in numeric order for bounded
// ranges). It returns nil for an unbounded requirement.
func (r Requirement) Values() []string {
	if !r.complement {
		return slices.Clone(r.values)
	}
	if !r.IsFinite() || r.Len() > 10000 {
		return nil
	}
	var out []string
	for n := r.lower; n <= r.upper; n++ {
		s := strconv.FormatInt(n, 10)
		if _, excluded := slices.BinarySearch(r.values, s); !excluded {
			out = append(out, s)
		}
	}
	return out
}

// Any returns one allowed value, preferring the smallest, and false when none exists or the set is unbounded
// without integer bounds.
func (r Requirement) Any() (string, bool) {
	if !r.complement {
		if len(r.values) == 0 {
			return "", false
		}
		return r.values[0], true
	}
	if !r.hasLower && !r.hasUpper {
		return "", false
	}
	start := r.lower
	if !r.hasLower {
		start = min(0, r.upper)
	}
	for n, tries := start, 0; (!r.hasUpper || n <= r.upper) && tries < 100000; n, tries = n+1, tries+1 {
		if s := strconv.FormatInt(n, 10); r.Has(s) {
			return s, true
		}
	}
	return "", false
}

// Intersection returns the values allowed by both requirements. MinValues is the larger of the two.
func (r Requirement) Intersection(other Requirement) Requirement {
	out := Requirement{Key: r.Key, MinValues: maxMinValues(r.MinValues, other.MinValues)}
	out.absentAllowed = r.absentAllowed && other.absentAllowed
	out.hasLower, out.lower = tighterLower(r, other)
	out.hasUpper, out.upper = tighterUpper(r, other)
	switch {
	case !r.complement && !other.complement:
		out.values = intersectSorted(r.values, other.values)
	case !r.complement:
		out.values = subtractSorted(r.values, other.values)
	case !other.complement:
		out.values = subtractSorted(other.values, r.values)
	default:
		out.complement = true
		out.values = unionSorted(r.values, other.values)
	}
	return out.normalised()
}

// Intersects reports whether some node satisfies both requirements.
func (r Requirement) Intersects(other Requirement) bool {
	if r.absentAllowed && other.absentAllowed {
		return true
	}
	if !r.complement && !other.complement && !r.hasBounds() && !other.hasBounds() {
		for _, v := range r.values {
			if _, ok := slices.BinarySearch(other.values, v); ok {
				return true
			}
		}
		return false
	}
	return r.Intersection(other).Len() > 0
}

// IsSubsetOf reports whether every label state r allows is allowed by other. It may answer false for some
// subsets it can't decide cheaply (a bounded range against a listed set); callers use it as a fast path.
func (r Requirement) IsSubsetOf(other Requirement) bool {
	if r.absentAllowed && !other.absentAllowed {
		return false
	}
	if !r.complement {
		for _, v := range r.values {
			if !other.Has(v) {
				return false
			}
		}
		return true
	}
	if !other.complement {
		return false
	}
	for _, v := range other.values {
		if r.Has(v) {
			return false
		}
	}
	return (!other.hasLower || (r.hasLower && r.lower >= other.lower)) &&
		(!other.hasUpper || (r.hasUpper && r.upper <= other.upper))
}

// Operator returns the node selector operator that best describes the requirement.
func (r Requirement) Operator() corev1.NodeSelectorOperator {
	switch {
	case r.hasLower && !r.hasUpper:
		return v1.NodeSelectorOpGte
	case r.hasUpper && !r.hasLower:
		return v1.NodeSelectorOpLte
	case !r.complement && len(r.values) == 0 && r.absentAllowed:
		return corev1.NodeSelectorOpDoesNotExist
	case !r.complement:
		return corev1.NodeSelectorOpIn
	case len(r.values) == 0 && !r.absentAllowed && !r.hasBounds():
		return corev1.NodeSelectorOpExists
	default:
		return corev1.NodeSelectorOpNotIn
	}
}

// String describes the requirement for people, e.g. `In [a b]`, `NotIn [c]`, `Exists`, `Gte 4, Lte 8`.
func (r Requirement) String() string {
	var parts []string
	switch {
	case !r.complement && len(r.values) == 0 && r.absentAllowed:
		return "DoesNotExist"
	case !r.complement:
		parts = append(parts, "In ["+strings.Join(r.values, " ")+"]")
	case len(r.values) > 0:
		parts = append(parts, "NotIn ["+strings.Join(r.values, " ")+"]")
	case !r.hasBounds() && !r.absentAllowed:
		parts = append(parts, "Exists")
	}
	if r.hasLower {
		parts = append(parts, "Gte "+strconv.FormatInt(r.lower, 10))
	}
	if r.hasUpper {
		parts = append(parts, "Lte "+strconv.FormatInt(r.upper, 10))
	}
	if r.complement && r.absentAllowed && len(r.values) == 0 && !r.hasBounds() {
		return "Any"
	}
	if r.absentAllowed && (!r.complement || r.hasBounds()) {
		parts = append(parts, "or absent")
	}
	return strings.Join(parts, ", ")
}

// NodeSelectorRequirements renders the requirement as node selector requirements that together select
// exactly the same nodes (one requirement in most cases, two for ranges such as Gte 4, Lte 8).
func (r Requirement) NodeSelectorRequirements() []v1.NodeSelectorRequirementWithMinValues {
	with := func(op corev1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirementWithMinValues {
		return v1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: op, Values: values, MinValues: r.MinValues}
	}
	switch {
	case !r.complement && len(r.values) == 0 && r.absentAllowed:
		return []v1.NodeSelectorRequirementWithMinValues{with(corev1.NodeSelectorOpDoesNotExist)}
	case !r.complement:
		return []v1.NodeSelectorRequirementWithMinValues{with(corev1.NodeSelectorOpIn, slices.Clone(r.values)...)}
	}
	var out []v1.NodeSelectorRequirementWithMinValues
	if r.hasLower {
		out = append(out, with(v1.NodeSelectorOpGte, strconv.FormatInt(r.lower, 10)))
	}
	if r.hasUpper {
		out = append(out, with(v1.NodeSelectorOpLte, strconv.FormatInt(r.upper, 10)))
	}
	if !r.absentAllowed && len(out) == 0 {
		out = append(out, with(corev1.NodeSelectorOpExists))
	}
	if len(r.values) > 0 {
		out = append(out, with(corev1.NodeSelectorOpNotIn, slices.Clone(r.values)...))
	}
	return out
}

func (r Requirement) hasBounds() bool { return r.hasLower || r.hasUpper }

func (r Requirement) inBounds(n int64) bool {
	return (!r.hasLower || n >= r.lower) && (!r.hasUpper || n <= r.upper)
}

// normalised trims values to the integer bounds, turns an empty range into an empty finite set and drops
// bounds from finite sets, so that equal sets have equal representations.
func (r Requirement) normalised() Requirement {
	if !r.hasBounds() {
		return r
	}
	kept := r.values[:0:0]
	for _, v := range r.values {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && r.inBounds(n) {
			kept = append(kept, v)
		}
	}
	r.values = kept
	if !r.complement || (r.hasLower && r.hasUpper && r.lower > r.upper) {
		if r.complement {
			r.values = nil
		}
		r.complement, r.hasLower, r.hasUpper, r.lower, r.upper = false, false, false, 0, 0
	}
	return r
}

func tighterLower(a, b Requirement) (bool, int64) {
	switch {
	case a.hasLower && b.hasLower:
		return true, max(a.lower, b.lower)
	case a.hasLower:
		return true, a.lower
	case b.hasLower:
		return true, b.lower
	}
	return false, 0
}

func tighterUpper(a, b Requirement) (bool, int64) {
	switch {
	case a.hasUpper && b.hasUpper:
		return true, min(a.upper, b.upper)
	case a.hasUpper:
		return true, a.upper
	case b.hasUpper:
		return true, b.upper
	}
	return false, 0
}

func maxMinValues(a, b *int) *int {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case *a >= *b:
		return a
	}
	return b
}

func saturatingAdd(n, delta int64) int64 {
	if delta > 0 && n > math.MaxInt64-delta || delta < 0 && n < math.MinInt64-delta {
		return n
	}
	return n + delta
}

func sortedUnique(values []string) []string {
	out := slices.Clone(values)
	slices.Sort(out)
	return slices.Compact(out)
}

func intersectSorted(a, b []string) []string {
	var out []string
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch strings.Compare(a[i], b[j]) {
		case 0:
			out = append(out, a[i])
			i, j = i+1, j+1
		case -1:
			i++
		default:
			j++
		}
	}
	return out
}

func subtractSorted(a, b []string) []string {
	var out []string
	for _, v := range a {
		if _, found := slices.BinarySearch(b, v); !found {
			out = append(out, v)
		}
	}
	return out
}

func unionSorted(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
