package state

import "sync/atomic"

// Stamp is a monotonic change counter shared by the stores. It is bumped whenever something a scheduling or
// disruption decision depends on changes, so a loop that remembers the stamp of its last pass can tell
// whether anything has moved since. The zero value is ready to use.
type Stamp struct {
	n atomic.Uint64
}

// Bump records a change.
func (s *Stamp) Bump() { s.n.Add(1) }

// Value returns the current stamp. It never decreases.
func (s *Stamp) Value() uint64 { return s.n.Load() }
