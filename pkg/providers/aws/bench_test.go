package aws_test

import (
	"context"
	"sync"
	"testing"
	"time"
)

// BenchmarkLaunch100 launches 100 NodeClaims at once against the fake with 50 ms of latency on every EC2
// call, and reports the CreateFleet calls it took.
func BenchmarkLaunch100(b *testing.B) {
	h := newHarness(b)
	nc := nodeClass(b, "bench")
	h.fake.Faults().Latency("ec2", "*", 50*time.Millisecond)
	b.ResetTimer()
	for range b.N {
		before := h.fake.Faults().Calls("ec2", "CreateFleet")
		var wg sync.WaitGroup
		for range 100 {
			claim := nodeClaim(nc.Name, "on-demand", "m5.large", "m5.xlarge", "c5.large")
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := h.provider.Create(context.Background(), claim); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(h.fake.Faults().Calls("ec2", "CreateFleet")-before), "createfleet/op")
	}
}
