package scheduling

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Requirements is a conjunction of Requirement keyed by normalised label key. The zero value (nil) allows
// every node. Methods never modify their receiver unless their name says so (Add).
type Requirements map[string]Requirement

// NewRequirements returns requirements holding the given requirements, intersecting any that share a key.
func NewRequirements(requirements ...Requirement) Requirements {
	out := make(Requirements, len(requirements))
	for _, r := range requirements {
		out.Add(r)
	}
	return out
}

// FromLabels returns In requirements that pin every label to its value.
func FromLabels(labels map[string]string) Requirements {
	out := make(Requirements, len(labels))
	for k, v := range labels {
		out.Add(MustRequirement(k, corev1.NodeSelectorOpIn, v))
	}
	return out
}

// FromNodeSelectorRequirements converts core node selector requirements (for example one node affinity term).
func FromNodeSelectorRequirements(requirements []corev1.NodeSelectorRequirement) (Requirements, error) {
	out := make(Requirements, len(requirements))
	for _, nsr := range requirements {
		r, err := NewRequirement(nsr.Key, nsr.Operator, nsr.Values...)
		if err != nil {
			return nil, err
		}
		out.Add(r)
	}
	return out, nil
}

// FromNodePoolRequirements converts NodePool or NodeClaim requirements, keeping minValues.
func FromNodePoolRequirements(requirements []v1.NodeSelectorRequirementWithMinValues) (Requirements, error) {
	out := make(Requirements, len(requirements))
	for _, nsr := range requirements {
		r, err := NewRequirement(nsr.Key, nsr.Operator, nsr.Values...)
		if err != nil {
			return nil, err
		}
		r.MinValues = nsr.MinValues
		out.Add(r)
	}
	return out, nil
}

// Add intersects r into the requirements, in place.
func (rs Requirements) Add(r Requirement) {
	if existing, ok := rs[r.Key]; ok {
		r = existing.Intersection(r)
	}
	rs[r.Key] = r
}

// Get returns the requirement for key, or one allowing every value and absence when the key is unconstrained.
func (rs Requirements) Get(key string) Requirement {
	if r, ok := rs[key]; ok {
		return r
	}
	return Requirement{Key: key, complement: true, absentAllowed: true}
}

// Has reports whether the key is constrained.
func (rs Requirements) Has(key string) bool {
	_, ok := rs[key]
	return ok
}

// Keys returns the constrained keys in sorted order.
func (rs Requirements) Keys() []string {
	keys := make([]string, 0, len(rs))
	for k := range rs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Clone returns a copy that may be modified independently.
func (rs Requirements) Clone() Requirements {
	out := make(Requirements, len(rs))
	for k, r := range rs {
		out[k] = r
	}
	return out
}

// Intersection returns the requirements of both sides together.
func (rs Requirements) Intersection(other Requirements) Requirements {
	out := rs.Clone()
	for _, k := range other.Keys() {
		out.Add(other[k])
	}
	return out
}

// Labels returns the labels a node satisfying the requirements must carry: every key whose requirement
// allows exactly one value and not absence.
func (rs Requirements) Labels() map[string]string {
	out := map[string]string{}
	for k, r := range rs {
		if !r.absentAllowed && r.Len() == 1 {
			if v, ok := r.Any(); ok {
				out[k] = v
			}
		}
	}
	return out
}

// MatchesLabels reports whether a node with these labels satisfies every requirement.
func (rs Requirements) MatchesLabels(labels map[string]string) bool {
	for k, r := range rs {
		v, ok := labels[k]
		if !r.Matches(v, ok) {
			return false
		}
	}
	return true
}

// NodeSelectorRequirements renders the requirements as NodeClaim requirements, sorted by key.
func (rs Requirements) NodeSelectorRequirements() []v1.NodeSelectorRequirementWithMinValues {
	var out []v1.NodeSelectorRequirementWithMinValues
	for _, k := range rs.Keys() {
		out = append(out, rs[k].NodeSelectorRequirements()...)
	}
	return out
}

// String renders the requirements in key order, e.g. `kubernetes.io/arch In [amd64]; zone NotIn [a]`.
func (rs Requirements) String() string {
	parts := make([]string, 0, len(rs))
	for _, k := range rs.Keys() {
		parts = append(parts, k+" "+rs[k].String())
	}
	return strings.Join(parts, "; ")
}

// CompatibilityOptions tunes Compatible.
type CompatibilityOptions struct {
	// AllowUndefined lists keys the receiver need not define for an incoming In or Exists requirement to be
	// met, typically the well-known labels whose values instance types supply.
	AllowUndefined map[string]bool
}

// WellKnownLabels returns Karpenter's well-known label keys (zone, instance type, arch, capacity type, ...)
// together with those the AWS provider registers (karpenter.k8s.aws/instance-family, instance-size,
// instance-cpu, topology.k8s.aws/zone-id, ...). A pod may select on them although a NodePool doesn't mention
// them; the instance types' values then decide which types remain, as in Karpenter. The result is a new map
// the caller may modify.
func WellKnownLabels() map[string]bool {
	known := v1.WellKnownLabels()
	for _, k := range awsv1.WellKnownLabels() {
		known[k] = true
	}
	return known
}

// AllowUndefinedWellKnown allows every well-known label (WellKnownLabels) and any extra keys.
func AllowUndefinedWellKnown(extra ...string) CompatibilityOptions {
	allowed := WellKnownLabels()
	for _, k := range extra {
		allowed[k] = true
	}
	return CompatibilityOptions{AllowUndefined: allowed}
}

// IncompatibleError says which key two sets of requirements disagree on and what each side allows.
type IncompatibleError struct {
	Key string
	// Have is what the receiver (for example a NodePool) allows; Want is what the incoming side (a pod) needs.
	Have, Want string
}

func (e *IncompatibleError) Error() string {
	if e.Have == "" {
		return fmt.Sprintf("label %q does not have known values (requires %s)", e.Key, e.Want)
	}
	return fmt.Sprintf("key %q: requires %s, allowed %s", e.Key, e.Want, e.Have)
}

// Compatible reports whether some node could satisfy both the receiver and incoming. A key the incoming side
// needs present (In, Exists, Gt, ...) but the receiver doesn't define is an error unless opts allows it.
// The error is an *IncompatibleError naming the first key in sorted order that fails.
func (rs Requirements) Compatible(incoming Requirements, opts CompatibilityOptions) error {
	if rs.compatibleUnordered(incoming, opts) {
		return nil
	}
	for _, k := range incoming.Keys() {
		want := incoming[k]
		have, defined := rs[k]
		if !defined {
			if want.absentAllowed || opts.AllowUndefined[k] {
				continue
			}
			return &IncompatibleError{Key: k, Want: want.String()}
		}
		if !have.Intersects(want) {
			return &IncompatibleError{Key: k, Have: have.String(), Want: want.String()}
		}
	}
	return nil
}

// Intersects reports whether some node could satisfy both sides, treating keys only one side defines as free.
func (rs Requirements) Intersects(other Requirements) error {
	small, large := rs, other
	if len(small) > len(large) {
		small, large = large, small
	}
	failed := false
	for k, a := range small { // unordered fast path; the error below is built in key order
		if b, ok := large[k]; ok && !a.Intersects(b) {
			failed = true
			break
		}
	}
	if !failed {
		return nil
	}
	for _, k := range small.Keys() {
		b, ok := large[k]
		if ok && !small[k].Intersects(b) {
			return &IncompatibleError{Key: k, Have: rs.Get(k).String(), Want: other.Get(k).String()}
		}
	}
	return nil
}

// ValidateNodePoolKeys returns an error for each requirement key a NodePool may not use (restricted labels
// such as kubernetes.io/hostname or the karpenter.sh domain).
func ValidateNodePoolKeys(requirements []v1.NodeSelectorRequirementWithMinValues) error {
	var problems []string
	for _, r := range requirements {
		if restricted, why := v1.IsRestrictedLabel(r.Key); restricted {
			problems = append(problems, why)
		}
		if r.MinValues != nil && (r.Operator == corev1.NodeSelectorOpIn) && len(r.Values) < *r.MinValues {
			problems = append(problems, "key "+strconv.Quote(r.Key)+" has minValues "+strconv.Itoa(*r.MinValues)+" but only "+strconv.Itoa(len(r.Values))+" values")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid requirements: %s", strings.Join(problems, "; "))
	}
	return nil
}

// compatibleUnordered is Compatible without building an error, iterating in map order.
func (rs Requirements) compatibleUnordered(incoming Requirements, opts CompatibilityOptions) bool {
	for k, want := range incoming {
		have, defined := rs[k]
		if !defined {
			if want.absentAllowed || opts.AllowUndefined[k] {
				continue
			}
			return false
		}
		if !have.Intersects(want) {
			return false
		}
	}
	return true
}
