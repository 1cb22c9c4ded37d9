package simulate

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
)

// randomValue builds a random JSON-able value: nested objects and arrays (empty ones too), strings with
// quotes, backslashes, brackets, colons, commas, HTML and non-ASCII characters, numbers, booleans, null.
func randomValue(rng *rand.Rand, depth int) any {
	pieces := []string{"a", "\"", "\\", "{", "}", "[", "]", ":", ",", "<", ">", "&", "é", "\u2028", "\n", " ", "x\\\"y"}
	str := func() string {
		var b strings.Builder
		for range rng.Intn(6) {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		return b.String()
	}
	kind := rng.Intn(8)
	if depth > 4 {
		kind = rng.Intn(4)
	}
	switch kind {
	case 0:
		return str()
	case 1:
		return rng.NormFloat64() * 1e6
	case 2:
		return rng.Intn(2) == 0
	case 3:
		return nil
	case 4, 5:
		m := map[string]any{}
		for range rng.Intn(4) {
			m[str()] = randomValue(rng, depth+1)
		}
		return m
	default:
		var s []any
		if rng.Intn(3) > 0 {
			s = []any{}
		}
		for range rng.Intn(4) {
			s = append(s, randomValue(rng, depth+1))
		}
		return s
	}
}

// TestIndentCompactAsMarshalIndent: indentCompact lays out json.Marshal's output byte for byte as
// json.MarshalIndent does.
func TestIndentCompactAsMarshalIndent(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := range 5000 {
		v := randomValue(rng, 0)
		compact, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if got := indentCompact(nil, compact); !bytes.Equal(got, want) {
			t.Fatalf("round %d: %s\nindentCompact:\n%s\nMarshalIndent:\n%s", round, compact, got, want)
		}
	}
}
