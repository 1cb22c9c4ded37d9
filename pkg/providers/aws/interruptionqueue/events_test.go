package interruptionqueue

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// TestParseEventGolden reads events shaped as the EC2, AWS Health and EventBridge documentation shows them.
func TestParseEventGolden(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, c := range []struct {
		file string
		kind cloudprovider.InterruptionKind
		ids  []string
	}{
		{"spot-interruption.json", cloudprovider.InterruptionSpot, []string{"i-0b662ef9931388ba0"}},
		{"rebalance-recommendation.json", cloudprovider.InterruptionRebalance, []string{"i-0b662ef9931388ba0"}},
		{"state-change-stopping.json", cloudprovider.InterruptionStopped, []string{"i-abcd1111"}},
		{"state-change-stopped.json", cloudprovider.InterruptionStopped, []string{"i-abcd1111"}},
		{"state-change-shutting-down.json", cloudprovider.InterruptionTerminated, []string{"i-abcd1111"}},
		{"state-change-terminated.json", cloudprovider.InterruptionTerminated, []string{"i-abcd1111"}},
		{"state-change-running.json", cloudprovider.InterruptionNoOp, nil},
		{"state-change-pending.json", cloudprovider.InterruptionNoOp, nil},
		{"health-scheduled-change.json", cloudprovider.InterruptionScheduledChange, []string{"i-abcd1111", "i-abcd2222"}},
		{"health-other-service.json", cloudprovider.InterruptionNoOp, nil},
		{"health-issue.json", cloudprovider.InterruptionNoOp, nil},
		{"capacity-reservation-interruption.json", cloudprovider.InterruptionCapacityReservation, []string{"i-0123456789abcdef0"}},
		{"autoscaling-launch.json", cloudprovider.InterruptionNoOp, nil},
	} {
		t.Run(c.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseEvent(string(body))
			if err != nil {
				t.Fatal(err)
			}
			if got.kind != c.kind || !slices.Equal(got.instanceIDs, c.ids) || !got.time.Equal(at) {
				t.Fatalf("parseEvent = %+v, want kind %s, instances %v, time %s", got, c.kind, c.ids, at)
			}
		})
	}
}

func TestParseEventRejectsWhatIsNotAnEvent(t *testing.T) {
	if got, err := parseEvent(""); err != nil || got.kind != cloudprovider.InterruptionNoOp {
		t.Fatalf("empty body = %+v, %v; want no_op", got, err)
	}
	for _, body := range []string{
		"not json",
		`{"version":"0","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":"i-123"}`,
		`{"version":"0","source":"aws.health","detail-type":"AWS Health Event","detail":{"affectedEntities":"i-123"}}`,
		`{"version":"0","source":"aws.ec2","detail-type":"EC2 Instance State-change Notification","time":"yesterday"}`,
	} {
		if got, err := parseEvent(body); err == nil {
			t.Errorf("parseEvent(%q) = %+v, want an error", body, got)
		}
	}
}
