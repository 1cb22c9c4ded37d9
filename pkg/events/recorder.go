package events

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Event is one event about one object.
type Event struct {
	// InvolvedObject is the object the event is about.
	InvolvedObject runtime.Object
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason is a short CamelCase reason, for example "Nominated".
	Reason string
	// Message is the text a person reads.
	Message string
	// DedupeValues identify the event for de-duplication together with the reason; equal values within
	// DedupeTimeout publish once. Empty means the message is the identity.
	DedupeValues []string
	// DedupeTimeout is how long an identical event is suppressed; zero means DefaultDedupeTimeout.
	DedupeTimeout time.Duration
}

// DefaultDedupeTimeout is how long an identical event is suppressed when the event does not say.
const DefaultDedupeTimeout = 2 * time.Minute

// Recorder publishes events.
type Recorder interface {
	Publish(events ...Event)
}

// NewRecorder returns a Recorder that publishes through a client-go EventRecorder and drops repeats of
// the same event inside its dedupe window.
func NewRecorder(r record.EventRecorder, c clock.Clock) Recorder {
	return &recorder{rec: r, clock: c, seen: map[string]time.Time{}}
}

type recorder struct {
	rec   record.EventRecorder
	clock clock.Clock

	mu   sync.Mutex
	seen map[string]time.Time // dedupe key → when the suppression ends
}

// Publish sends each event unless an identical one was sent within its dedupe window.
func (r *recorder) Publish(evts ...Event) {
	for _, e := range evts {
		if !r.admit(e) {
			continue
		}
		r.rec.Event(e.InvolvedObject, e.Type, e.Reason, e.Message)
	}
}

// admit reports whether e is outside the dedupe window of an identical event, and opens a new window.
func (r *recorder) admit(e Event) bool {
	key := dedupeKey(e)
	timeout := e.DedupeTimeout
	if timeout == 0 {
		timeout = DefaultDedupeTimeout
	}
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if until, ok := r.seen[key]; ok && now.Before(until) {
		return false
	}
	r.seen[key] = now.Add(timeout)
	if len(r.seen) > 10000 {
		for k, until := range r.seen {
			if !now.Before(until) {
				delete(r.seen, k)
			}
		}
	}
	return true
}

// dedupeKey identifies an event: the object, the reason and the dedupe values (or the message).
func dedupeKey(e Event) string {
	uid := ""
	if o, ok := e.InvolvedObject.(interface{ GetUID() types.UID }); ok {
		uid = string(o.GetUID())
	}
	values := e.DedupeValues
	if len(values) == 0 {
		values = []string{e.Message}
	}
	return fmt.Sprintf("%s/%s/%s/%q", uid, e.Type, e.Reason, values)
}

// Normal and Warning are the event types.
const (
	Normal  = corev1.EventTypeNormal
	Warning = corev1.EventTypeWarning
)
