package provisioning

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Batcher gathers pending-pod triggers into batches so one scheduling pass sees many pods: a batch closes
// after IdleDuration without a new trigger, or MaxDuration after its first trigger, whichever comes first
// (Karpenter's BATCH_IDLE_DURATION, default 1s, and BATCH_MAX_DURATION, default 10s). As in Karpenter, a
// trigger is keyed by the object that needs capacity, and only the first trigger of a key counts in a batch:
// a pending pod is updated again and again while it waits (each failed kube-scheduler attempt, each hint),
// and those updates must not hold the batch open until MaxDuration when no new pod has come.
//
// A pod some pass already planned (nominated to a Node or a NodeClaim) reminds the batcher instead
// (Remind): it opens a batch if none is open, which closes MaxDuration later unless new pods arrive, but it
// never keeps a batch from going idle. So while a burst of pods is still coming, the kube-scheduler's
// attempts at the pods planned before do not keep its next batch open to MaxDuration, and that batch
// closes IdleDuration after the burst's last pod, as BATCH_IDLE_DURATION says ("no new pending pods").
//
// Trigger records its time synchronously, so when a batch closes depends only on the clock, never on how
// quickly the waiting goroutine runs.
type Batcher struct {
	clock        clock.Clock
	idleDuration time.Duration
	maxDuration  time.Duration

	wake chan struct{} // tells Wait to look at the trigger times again

	mu    sync.Mutex
	first time.Time // first trigger or reminder of the open batch; zero when no batch is open
	last  time.Time // latest trigger of the open batch; zero when only reminders opened it
	// keys are the keys that triggered the open batch, or the next one while none is open.
	keys map[types.UID]struct{}
}

// NewBatcher returns a Batcher with the given windows.
func NewBatcher(c clock.Clock, idle, max time.Duration) *Batcher {
	return &Batcher{clock: c, idleDuration: idle, maxDuration: max, wake: make(chan struct{}, 1)}
}

// Trigger records that the object with the key (a pending pod, a draining node) needs capacity, opening a
// batch if none is open; a key that already triggered the open batch changes nothing. It never blocks.
func (b *Batcher) Trigger(key types.UID) {
	b.mu.Lock()
	if _, seen := b.keys[key]; seen {
		b.mu.Unlock()
		return
	}
	if b.keys == nil {
		b.keys = map[types.UID]struct{}{}
	}
	b.keys[key] = struct{}{}
	b.mu.Unlock()
	b.TriggerNow()
}

// TriggerNow records that something worth scheduling happened that has no key of its own (a pass to retry),
// opening a batch if none is open, or keeping the open one from going idle. It never blocks.
func (b *Batcher) TriggerNow() {
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

// Remind records that a pod some pass already planned is still pending: it opens a batch if none is open,
// and leaves an open batch's idle window alone. It never blocks.
func (b *Batcher) Remind() {
	now := b.clock.Now()
	b.mu.Lock()
	opened := b.first.IsZero()
	if opened {
		b.first = now
	}
	b.mu.Unlock()
	if opened {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// Wait blocks until a batch closes and reports true, or until ctx ends and reports false.
func (b *Batcher) Wait(ctx context.Context) bool {
	for {
		remaining, open := b.TimeLeft()
		if open && remaining <= 0 {
			b.mu.Lock()
			b.first, b.last, b.keys = time.Time{}, time.Time{}, nil
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
	closeAt := b.first.Add(b.maxDuration)
	if idleAt := b.last.Add(b.idleDuration); !b.last.IsZero() && idleAt.Before(closeAt) {
		closeAt = idleAt
	}
	return closeAt.Sub(b.clock.Now()), true
}

func stop(t clock.Timer) {
	if t != nil {
		t.Stop()
	}
}
