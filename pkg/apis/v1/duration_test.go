package v1_test

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

func TestNillableDurationRoundTrip(t *testing.T) {
	for _, in := range []string{`"Never"`, `"720h"`, `"1h30m"`, `"0s"`} {
		var d v1.NillableDuration
		if err := json.Unmarshal([]byte(in), &d); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != in {
			t.Errorf("round trip of %s gave %s", in, out)
		}
		if got := d.IsNever(); got != (in == `"Never"`) {
			t.Errorf("%s: IsNever = %v", in, got)
		}
	}
}

func TestNillableDurationValues(t *testing.T) {
	d := v1.MustParseNillableDuration("90m")
	if d.Duration == nil || *d.Duration != 90*time.Minute {
		t.Fatalf("90m parsed as %v", d.Duration)
	}
	if out, _ := json.Marshal(d); string(out) != `"1h30m0s"` {
		t.Errorf("constructed 90m marshals as %s", out)
	}
	if out, _ := json.Marshal(v1.NillableDuration{}); string(out) != `"Never"` {
		t.Errorf("zero value marshals as %s, want Never", out)
	}
	var bad v1.NillableDuration
	if err := json.Unmarshal([]byte(`"30d"`), &bad); err == nil {
		t.Error("30d accepted")
	}
	c := d.DeepCopy()
	*c.Duration = time.Second
	if *d.Duration != 90*time.Minute {
		t.Error("DeepCopy shares the duration")
	}
}

func TestIsRestrictedLabel(t *testing.T) {
	tests := map[string]bool{
		"kubernetes.io/hostname":             true,
		"karpenter.sh/nodepool":              true,
		"karpenter.sh/capacity-type":         false,
		"karpenter.sh/custom":                true,
		"kubernetes.io/arch":                 false,
		"beta.kubernetes.io/arch":            false,
		"node.kubernetes.io/instance-type":   false,
		"node-restriction.kubernetes.io/foo": false,
		"kubernetes.io/custom":               false, // Karpenter v1.14 restricts only its own domains
		"k8s.io/custom":                      false,
		"sub.karpenter.sh/custom":            true,
		"kops.k8s.io/instancegroup":          false,
		"example.com/team":                   false,
		"team":                               false,
	}
	for key, want := range tests {
		got, why := v1.IsRestrictedLabel(key)
		if got != want {
			t.Errorf("IsRestrictedLabel(%q) = %v (%s), want %v", key, got, why, want)
		}
		if got && why == "" {
			t.Errorf("IsRestrictedLabel(%q) gave no reason", key)
		}
	}
	if v1.NormalizeLabelKey("failure-domain.beta.kubernetes.io/zone") != v1.LabelTopologyZone {
		t.Error("beta zone label not normalised")
	}
}

// TestNillableDurationComparable guards against an unexported field: the cluster state compares NodeClaim
// specs with equality.Semantic.DeepEqual, which panics on unexported fields.
func TestNillableDurationComparable(t *testing.T) {
	var a, b v1.NodeClaimSpec
	if err := json.Unmarshal([]byte(`{"expireAfter":"720h","requirements":[]}`), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"expireAfter":"720h","requirements":[]}`), &b); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(a, b) {
		t.Error("equal specs compare unequal")
	}
	b.ExpireAfter = v1.MustParseNillableDuration("1h")
	if equality.Semantic.DeepEqual(a, b) {
		t.Error("different expiries compare equal")
	}
}
