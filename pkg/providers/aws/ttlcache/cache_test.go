package ttlcache

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestEntriesExpireOnTheClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := New[string, int](clk, time.Minute)
	c.Set("a", 1)
	c.SetFor("b", 2, time.Hour)
	clk.Step(59 * time.Second)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("a = %d, %v before its TTL", v, ok)
	}
	clk.Step(time.Second)
	if _, ok := c.Get("a"); ok {
		t.Fatal("a is still there at its TTL")
	}
	if v, ok := c.Get("b"); !ok || v != 2 {
		t.Fatalf("b = %d, %v within its own TTL", v, ok)
	}
	if got := c.Entries(); len(got) != 1 || got["b"] != 2 {
		t.Fatalf("Entries = %v, want only b", got)
	}
	c.Delete("b")
	if _, ok := c.Get("b"); ok {
		t.Fatal("b is still there after Delete")
	}
}
