package v1

import (
	"encoding/json"
	"fmt"
	"time"
)

// Never is the value of a NillableDuration that never elapses.
const Never = "Never"

// NillableDuration is a duration that may also be "Never". It is stored as a string ("720h", "30s" or
// "Never"); a nil Duration means Never.
// +kubebuilder:object:generate=false
type NillableDuration struct {
	*time.Duration `json:"-"`

	// Raw keeps the exact bytes that were decoded, so a value round-trips unchanged. It is exported so
	// that reflection-based comparisons (equality.Semantic.DeepEqual) can read it.
	Raw []byte `json:"-" hash:"ignore"`
}

// MustParseNillableDuration parses "Never" or a Go duration, and panics on anything else. For constants and tests.
func MustParseNillableDuration(s string) NillableDuration {
	d, err := ParseNillableDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// ParseNillableDuration parses "Never" or a Go duration.
func ParseNillableDuration(s string) (NillableDuration, error) {
	if s == Never {
		// Never is the zero value, with no raw text: Karpenter's template hash skips zero values, so a
		// template saying "Never" hashes like one that leaves expireAfter out, as it does upstream.
		return NillableDuration{}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return NillableDuration{}, fmt.Errorf("parsing duration %q, %w", s, err)
	}
	return NillableDuration{Duration: &d}, nil
}

// IsNever reports whether the duration never elapses.
func (d NillableDuration) IsNever() bool { return d.Duration == nil }

// String returns "Never" or the Go duration text.
func (d NillableDuration) String() string {
	if d.Duration == nil {
		return Never
	}
	return d.Duration.String()
}

// UnmarshalJSON accepts "Never" or a Go duration string.
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("decoding duration, %w", err)
	}
	parsed, err := ParseNillableDuration(s)
	if err != nil {
		return err
	}
	*d = parsed
	if !d.IsNever() {
		d.Raw = append([]byte(nil), b...)
	}
	return nil
}

// MarshalJSON writes the value as it was read, or "Never" / the Go duration text.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	if d.Raw != nil {
		return d.Raw, nil
	}
	return json.Marshal(d.String())
}

// DeepCopyInto copies the duration; it is written by hand because controller-gen cannot copy the embedded pointer.
func (d *NillableDuration) DeepCopyInto(out *NillableDuration) {
	*out = NillableDuration{}
	if d.Duration != nil {
		v := *d.Duration
		out.Duration = &v
	}
	if d.Raw != nil {
		out.Raw = append([]byte(nil), d.Raw...)
	}
}

// DeepCopy returns a copy of the duration.
func (d *NillableDuration) DeepCopy() *NillableDuration {
	if d == nil {
		return nil
	}
	out := new(NillableDuration)
	d.DeepCopyInto(out)
	return out
}
