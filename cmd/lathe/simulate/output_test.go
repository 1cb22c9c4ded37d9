package simulate

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// TestWriteJSONAsEncoder: -o json is what an indenting json.Encoder writes (the format before writeJSON
// marshalled at once), HTML characters escaped and a final newline.
func TestWriteJSONAsEncoder(t *testing.T) {
	plan := &solver.Plan{PricePerHour: 1.25, LowerBoundPerHour: 1,
		NodeClaims: []solver.NodeClaimPlan{{Name: "a<b>&c", NodePool: "default", InstanceTypeNames: []string{"m5.large"}, Zone: "z", PricePerHour: 1.25}}}
	var got bytes.Buffer
	if err := writeJSON(&got, plan); err != nil {
		t.Fatal(err)
	}
	var out jsonPlan
	if err := json.Unmarshal(got.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("got\n%s\nwant\n%s", &got, &want)
	}
}
