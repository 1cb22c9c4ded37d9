package simulate

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// gcSettings reads the collector's percent (the largest value when off) and memory limit without changing
// them.
func gcSettings() (percent, limit uint64) {
	samples := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(samples)
	return samples[0].Value.Uint64(), samples[1].Value.Uint64()
}

// TestDeferFirstCollection: collection is off until the first one, which the memory limit forces; then
// the settings are what they were.
func TestDeferFirstCollection(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
	deferFirstCollection()
	if percent, limit := gcSettings(); percent != math.MaxUint64 || limit != firstCollectionAt {
		t.Fatalf("after deferFirstCollection: GC percent %d, memory limit %d; want off (the largest value) and %d", percent, limit, firstCollectionAt)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		runtime.GC()
		percent, limit := gcSettings()
		if percent == 100 && limit == 1<<40 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a collection: GC percent %d, memory limit %d; want 100 and %d back", percent, limit, uint64(1<<40))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDeferFirstCollectionLeavesUserSettings: GOGC or GOMEMLIMIT in the environment keep the collector as
// the runtime set it.
func TestDeferFirstCollectionLeavesUserSettings(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "200")
			defer debug.SetGCPercent(debug.SetGCPercent(100))
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
			deferFirstCollection()
			if percent, limit := gcSettings(); percent != 100 || limit != 1<<40 {
				t.Fatalf("with %s set: GC percent %d, memory limit %d; want them unchanged (100, %d)", env, percent, limit, uint64(1<<40))
			}
		})
	}
}
