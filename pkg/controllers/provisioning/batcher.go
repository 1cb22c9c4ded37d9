package provisioning

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Batcher gathers pending-pod triggers into batches so one scheduling pass sees many pods: a batch closes
// after IdleDuration without a new trigger, or MaxDuration after its first trigger, whichever comes first
// (Karpenter's BATCH_IDLE_DURATION, default 1s, and BATCH_MAX_DURATION, default 10s).
//
// Trigger records its time synchronously, so when a batch closes depends only on the clock, never on how
// quickly the waiting goroutine runs.
type Batcher struct {
	clock        clock.Clock
	idleDuration time.Duration
	maxDuration  time.Duration

	wake chan struct{} // tells Wait to look at the trigger times again

	mu    sync.Mutex
	first time.Time // first trigger of the open batch; zero when no batch is open
	last  time.Time // latest trigger of the open batch
}

// NewBatcher returns a Batcher with the given windows.
func NewBatcher(c clock.Clock, idle, max time.Duration) *Batcher {
	return &Batcher{clock: c, idleDuration: idle, maxDuration: max, wake: make(chan struct{}, 1)}
}

// Trigger records that something worth scheduling happened, opening a batch if none is open. It never blocks.
func (b *Batcher) Trigger() {
	now := b.clock.Now()
	b.mu.Lock()
	if b.first.IsZero() {
		b.first = now
	}
	b.last = now
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Wait blocks until a batch closes and reports true, or until ctx ends and reports false.
func (b *Batcher) Wait(ctx context.Context) bool {
	for {
		remaining, open := b.TimeLeft()
		if open && remaining <= 0 {
			b.mu.Lock()
			b.first, b.last = time.Time{}, time.Time{}
			b.mu.Unlock()
			return true
		}
		var timer clock.Timer
		var fired <-chan time.Time
		if open {
			timer = b.clock.NewTimer(remaining)
			fired = timer.C()
		}
		select {
		case <-ctx.Done():
			stop(timer)
			return false
		case <-b.wake:
		case <-fired:
		}
		stop(timer)
	}
}

// TimeLeft returns how long the open batch has left before it closes (zero or less: it is due), and
// whether a batch is open at all.
func (b *Batcher) TimeLeft() (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.first.IsZero() {
		return 0, false
	}
	closeAt := b.last.Add(b.idleDuration)
	if maxAt := b.first.Add(b.maxDuration); maxAt.Before(closeAt) {
		closeAt = maxAt
	}
	return closeAt.Sub(b.clock.Now()), true
}

func stop(t clock.Timer) {
	if t != nil {
		t.Stop()
	}
}
