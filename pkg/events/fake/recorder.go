// Package fake is an events.Recorder for unit tests: it keeps every published event in memory.
package fake

import (
	"sync"

	"github.com/lathe-autoscaler/lathe/pkg/events"
)

// Recorder keeps published events, without de-duplication.
type Recorder struct {
	mu     sync.Mutex
	events []events.Event
}

var _ events.Recorder = (*Recorder)(nil)

// Publish keeps the events.
func (r *Recorder) Publish(evts ...events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, evts...)
}

// Events returns a copy of everything published so far.
func (r *Recorder) Events() []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]events.Event(nil), r.events...)
}

// WithReason returns the published events with the reason.
func (r *Recorder) WithReason(reason string) []events.Event {
	var out []events.Event
	for _, e := range r.Events() {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// Reset forgets every event.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = nil
}
