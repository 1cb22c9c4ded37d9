// Package unavailable remembers the EC2 offerings (instance type, zone, capacity type) that recently failed
// to launch for lack of capacity, for three minutes as Karpenter's AWS provider does, so that instance types
// report them unavailable and launches skip them. A sequence number changes whenever the set does, so that
// callers can cache what they derive from it.
package unavailable

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// TTL is how long an offering stays unavailable after a capacity error.
const TTL = 3 * time.Minute

type key struct{ instanceType, zone, capacityType string }

// Offerings is the cache. Its zero value is not usable; call New. Safe for concurrent use.
type Offerings struct {
	clock clock.Clock
	seq   atomic.Uint64

	mu    sync.Mutex
	until map[key]time.Time
}

// New returns an empty cache timed by clk (the real clock when nil).
func New(clk clock.Clock) *Offerings {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Offerings{clock: clk, until: map[key]time.Time{}}
}

// MarkUnavailable makes the offering unavailable for TTL from now.
func (o *Offerings) MarkUnavailable(instanceType, zone, capacityType string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.until[key{instanceType, zone, capacityType}] = o.clock.Now().Add(TTL)
	o.seq.Add(1)
}

// IsUnavailable reports whether the offering failed within the last TTL.
func (o *Offerings) IsUnavailable(instanceType, zone, capacityType string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := key{instanceType, zone, capacityType}
	until, ok := o.until[k]
	if !ok {
		return false
	}
	if !o.clock.Now().Before(until) {
		delete(o.until, k)
		o.seq.Add(1)
		return false
	}
	return true
}

// Version is the sequence number and the time the earliest entry expires (zero without entries): what
// was derived from the cache stays right while both the number is the same and that time hasn't come.
func (o *Offerings) Version() (uint64, time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var earliest time.Time
	for _, until := range o.until {
		if earliest.IsZero() || until.Before(earliest) {
			earliest = until
		}
	}
	return o.seq.Load(), earliest
}

// SeqNum changes whenever an offering is marked or expires (as observed), for cache keys.
func (o *Offerings) SeqNum() uint64 { return o.seq.Load() }
