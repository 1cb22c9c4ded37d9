package unavailable_test

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/unavailable"
)

func TestOfferingReturnsAfterTTL(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cache := unavailable.New(clk)
	seq := cache.SeqNum()
	cache.MarkUnavailable("m5.large", "us-east-1a", "spot")
	if cache.SeqNum() == seq {
		t.Fatal("marking did not change the sequence number")
	}
	if !cache.IsUnavailable("m5.large", "us-east-1a", "spot") {
		t.Fatal("marked offering is available")
	}
	for _, other := range [][3]string{{"m5.xlarge", "us-east-1a", "spot"}, {"m5.large", "us-east-1b", "spot"}, {"m5.large", "us-east-1a", "on-demand"}} {
		if cache.IsUnavailable(other[0], other[1], other[2]) {
			t.Fatalf("%v is unavailable", other)
		}
	}
	clk.Step(unavailable.TTL - time.Second)
	if !cache.IsUnavailable("m5.large", "us-east-1a", "spot") {
		t.Fatal("offering returned before 3 minutes")
	}
	clk.Step(time.Second)
	if cache.IsUnavailable("m5.large", "us-east-1a", "spot") {
		t.Fatal("offering still unavailable after 3 minutes")
	}
}
