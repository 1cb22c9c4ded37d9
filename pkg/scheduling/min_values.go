package scheduling

import (
	"fmt"
	"slices"
)

// MinValuesPolicy says what to do when the instance types left for a NodeClaim cover fewer distinct values
// of a key than a requirement's minValues asks for.
type MinValuesPolicy string

const (
	// MinValuesStrict fails the NodeClaim.
	MinValuesStrict MinValuesPolicy = "Strict"
	// MinValuesBestEffort launches anyway and marks the NodeClaim as relaxed.
	MinValuesBestEffort MinValuesPolicy = "BestEffort"
)

// MinValuesError reports a requirement whose minValues the candidate instance types don't meet.
type MinValuesError struct {
	Key       string
	Want, Got int
}

func (e *MinValuesError) Error() string {
	return fmt.Sprintf("minValues for %q requires %d distinct values, instance types offer %d", e.Key, e.Want, e.Got)
}

// CheckMinValues counts, for each requirement with MinValues, the distinct allowed values of its key across
// the given instance-type requirements, and returns a *MinValuesError for the first key (sorted) short of
// its minimum.
func (rs Requirements) CheckMinValues(instanceTypes []Requirements) error {
	for _, k := range rs.Keys() {
		r := rs[k]
		if r.MinValues == nil {
			continue
		}
		if got := DistinctValues(k, r, instanceTypes); got < *r.MinValues {
			return &MinValuesError{Key: k, Want: *r.MinValues, Got: got}
		}
	}
	return nil
}

// DistinctValues counts the values of key, allowed by within, that the instance types offer.
func DistinctValues(key string, within Requirement, instanceTypes []Requirements) int {
	seen := map[string]bool{}
	for _, it := range instanceTypes {
		r, ok := it[key]
		if !ok {
			continue
		}
		for _, v := range r.Values() {
			if within.Has(v) {
				seen[v] = true
			}
		}
	}
	return len(seen)
}

// SelectWithMinValues picks at most limit of the candidates, which must already be in preference order
// (cheapest first), so that every minValues requirement stays met whenever the full list meets it. It first
// takes, in order, each candidate that adds a value still needed, then fills up with the remaining candidates
// in order. The result keeps the candidates' order. requirementsOf returns a candidate's requirements.
func SelectWithMinValues[T any](rs Requirements, candidates []T, limit int, requirementsOf func(T) Requirements) []T {
	if len(candidates) <= limit {
		return candidates
	}
	chosen := make([]bool, len(candidates))
	count := 0
	for _, k := range rs.Keys() {
		r := rs[k]
		if r.MinValues == nil {
			continue
		}
		seen := map[string]bool{}
		for i, c := range candidates {
			if chosen[i] {
				for _, v := range requirementsOf(c).Get(k).Values() {
					seen[v] = true
				}
			}
		}
		for i, c := range candidates {
			if len(seen) >= *r.MinValues || count >= limit {
				break
			}
			if chosen[i] {
				continue
			}
			adds := false
			for _, v := range requirementsOf(c).Get(k).Values() {
				if r.Has(v) && !seen[v] {
					seen[v], adds = true, true
				}
			}
			if adds {
				chosen[i] = true
				count++
			}
		}
	}
	for i := range candidates {
		if count >= limit {
			break
		}
		if !chosen[i] {
			chosen[i] = true
			count++
		}
	}
	out := make([]T, 0, limit)
	for i, c := range candidates {
		if chosen[i] {
			out = append(out, c)
		}
	}
	return slices.Clip(out)
}
