package scheduling_test

import (
	"errors"
	"math"
	"math/rand"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

const key = "example.com/k"

func req(op corev1.NodeSelectorOperator, values ...string) scheduling.Requirement {
	return scheduling.MustRequirement(key, op, values...)
}

func TestRequirementMatches(t *testing.T) {
	cases := []struct {
		name    string
		r       scheduling.Requirement
		value   string
		present bool
		want    bool
	}{
		{"in matches listed", req(corev1.NodeSelectorOpIn, "a", "b"), "b", true, true},
		{"in rejects other", req(corev1.NodeSelectorOpIn, "a"), "c", true, false},
		{"in rejects absent", req(corev1.NodeSelectorOpIn, "a"), "", false, false},
		{"notin rejects listed", req(corev1.NodeSelectorOpNotIn, "a"), "a", true, false},
		{"notin allows absent", req(corev1.NodeSelectorOpNotIn, "a"), "", false, true},
		{"exists any value", req(corev1.NodeSelectorOpExists), "z", true, true},
		{"exists rejects absent", req(corev1.NodeSelectorOpExists), "", false, false},
		{"doesnotexist absent", req(corev1.NodeSelectorOpDoesNotExist), "", false, true},
		{"doesnotexist present", req(corev1.NodeSelectorOpDoesNotExist), "a", true, false},
		{"gt above", req(corev1.NodeSelectorOpGt, "4"), "5", true, true},
		{"gt equal", req(corev1.NodeSelectorOpGt, "4"), "4", true, false},
		{"gt non-integer", req(corev1.NodeSelectorOpGt, "4"), "x", true, false},
		{"lt below", req(corev1.NodeSelectorOpLt, "4"), "3", true, true},
		{"gte equal", req(v1.NodeSelectorOpGte, "4"), "4", true, true},
		{"lte equal", req(v1.NodeSelectorOpLte, "4"), "4", true, true},
		{"lte above", req(v1.NodeSelectorOpLte, "4"), "5", true, false},
		{"gt absent", req(corev1.NodeSelectorOpGt, "4"), "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Matches(tc.value, tc.present); got != tc.want {
				t.Errorf("%s.Matches(%q, %v) = %v, want %v", tc.r, tc.value, tc.present, got, tc.want)
			}
		})
	}
}

func TestRequirementIntersection(t *testing.T) {
	cases := []struct {
		name string
		a, b scheduling.Requirement
		want string
		len  int
	}{
		{"in and in", req(corev1.NodeSelectorOpIn, "a", "b"), req(corev1.NodeSelectorOpIn, "b", "c"), "In [b]", 1},
		{"in and notin", req(corev1.NodeSelectorOpIn, "a", "b"), req(corev1.NodeSelectorOpNotIn, "a"), "In [b]", 1},
		{"notin and notin", req(corev1.NodeSelectorOpNotIn, "a"), req(corev1.NodeSelectorOpNotIn, "b"), "NotIn [a b]", -1},
		{"exists and notin", req(corev1.NodeSelectorOpExists), req(corev1.NodeSelectorOpNotIn, "a"), "NotIn [a]", -1},
		{"doesnotexist and notin", req(corev1.NodeSelectorOpDoesNotExist), req(corev1.NodeSelectorOpNotIn, "a"), "DoesNotExist", 0},
		{"doesnotexist and in", req(corev1.NodeSelectorOpDoesNotExist), req(corev1.NodeSelectorOpIn, "a"), "In []", 0},
		{"gt and lt range", req(corev1.NodeSelectorOpGt, "2"), req(corev1.NodeSelectorOpLt, "6"), "Gte 3, Lte 5", 3},
		{"gt and in filters", req(corev1.NodeSelectorOpGt, "2"), req(corev1.NodeSelectorOpIn, "1", "3", "x"), "In [3]", 1},
		{"empty range", req(corev1.NodeSelectorOpGt, "5"), req(corev1.NodeSelectorOpLt, "3"), "In []", 0},
		{"range minus notin", req(v1.NodeSelectorOpGte, "1"), req(v1.NodeSelectorOpLte, "3"), "Gte 1, Lte 3", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.a.Intersection(tc.b)
			if got.String() != tc.want {
				t.Errorf("intersection = %q, want %q", got.String(), tc.want)
			}
			if tc.len >= 0 && got.Len() != tc.len {
				t.Errorf("len = %d, want %d", got.Len(), tc.len)
			}
		})
	}
}

func TestNewRequirementRejectsInvalid(t *testing.T) {
	for _, tc := range []struct {
		op     corev1.NodeSelectorOperator
		values []string
	}{{corev1.NodeSelectorOpGt, []string{"x"}}, {corev1.NodeSelectorOpLt, nil}, {"Near", nil}} {
		_, err := scheduling.NewRequirement(key, tc.op, tc.values...)
		var invalid *scheduling.InvalidRequirementError
		if !errors.As(err, &invalid) {
			t.Errorf("%s %v: got %v, want InvalidRequirementError", tc.op, tc.values, err)
		}
	}
}

func TestNormalisesBetaLabels(t *testing.T) {
	r := scheduling.MustRequirement("failure-domain.beta.kubernetes.io/zone", corev1.NodeSelectorOpIn, "a")
	if r.Key != v1.LabelTopologyZone {
		t.Errorf("key = %q, want %q", r.Key, v1.LabelTopologyZone)
	}
	r = scheduling.MustRequirement("beta.kubernetes.io/arch", corev1.NodeSelectorOpIn, "amd64")
	if r.Key != v1.LabelArch {
		t.Errorf("key = %q, want %q", r.Key, v1.LabelArch)
	}
}

// randomRequirement draws over a small universe so that intersections are often non-trivial.
func randomRequirement(rng *rand.Rand) scheduling.Requirement {
	values := func() []string {
		var out []string
		for i := 0; i < rng.Intn(4); i++ {
			out = append(out, strconv.Itoa(rng.Intn(8)))
		}
		return out
	}
	ops := []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
		corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte}
	op := ops[rng.Intn(len(ops))]
	switch op {
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte:
		return req(op, strconv.Itoa(rng.Intn(8)))
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		return req(op, values()...)
	}
	return req(op)
}

// universe is every label state the random requirements can tell apart.
func universe() (values []string, presents []bool) {
	for i := -1; i < 10; i++ {
		values, presents = append(values, strconv.Itoa(i)), append(presents, true)
	}
	return append(values, "x", ""), append(presents, true, false)
}

func TestRequirementProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	values, presents := universe()
	for i := 0; i < 5000; i++ {
		a, b, c := randomRequirement(rng), randomRequirement(rng), randomRequirement(rng)
		ab, ba := a.Intersection(b), b.Intersection(a)
		if ab.String() != ba.String() {
			t.Fatalf("not commutative: %s ∩ %s = %s but %s", a, b, ab, ba)
		}
		if l, r := ab.Intersection(c).String(), a.Intersection(b.Intersection(c)).String(); l != r {
			t.Fatalf("not associative: (%s ∩ %s) ∩ %s = %s, other grouping %s", a, b, c, l, r)
		}
		anyShared := false
		for j, v := range values {
			inBoth := a.Matches(v, presents[j]) && b.Matches(v, presents[j])
			if ab.Matches(v, presents[j]) != inBoth {
				t.Fatalf("%s ∩ %s = %s disagrees on %q/%v", a, b, ab, v, presents[j])
			}
			anyShared = anyShared || inBoth
		}
		if a.Intersects(b) != !ab.IsEmpty() {
			t.Fatalf("Intersects(%s, %s) = %v but intersection %s empty=%v", a, b, a.Intersects(b), ab, ab.IsEmpty())
		}
		if anyShared && ab.IsEmpty() {
			t.Fatalf("%s ∩ %s reported empty but a shared value exists", a, b)
		}
		if !ab.IsSubsetOf(a) && ab.Len() != math.MaxInt && !ab.IsEmpty() && ab.Operator() == corev1.NodeSelectorOpIn {
			t.Fatalf("%s ∩ %s = %s not reported as a subset of %s", a, b, ab, a)
		}
		if a.IsSubsetOf(b) {
			for j, v := range values {
				if a.Matches(v, presents[j]) && !b.Matches(v, presents[j]) {
					t.Fatalf("%s reported subset of %s but allows %q/%v", a, b, v, presents[j])
				}
			}
		}
		if !ab.IsEmpty() && !a.Intersects(ab) {
			t.Fatalf("%s is not compatible with its intersection %s", a, ab)
		}
		// The rendered node selector requirements select exactly the same label states.
		rebuilt, err := scheduling.FromNodePoolRequirements(ab.NodeSelectorRequirements())
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range values {
			if got := rebuilt.Get(key).Matches(v, presents[j]); got != ab.Matches(v, presents[j]) {
				t.Fatalf("%s rendered as %v disagrees on %q/%v", ab, ab.NodeSelectorRequirements(), v, presents[j])
			}
		}
	}
}

func FuzzRequirementIntersection(f *testing.F) {
	f.Add(int64(1), int64(2))
	f.Add(int64(99), int64(-3))
	f.Fuzz(func(t *testing.T, seedA, seedB int64) {
		a := randomRequirement(rand.New(rand.NewSource(seedA)))
		b := randomRequirement(rand.New(rand.NewSource(seedB)))
		values, presents := universe()
		ab := a.Intersection(b)
		for j, v := range values {
			if ab.Matches(v, presents[j]) != (a.Matches(v, presents[j]) && b.Matches(v, presents[j])) {
				t.Fatalf("%s ∩ %s = %s disagrees on %q", a, b, ab, v)
			}
		}
	})
}
