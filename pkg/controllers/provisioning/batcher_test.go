package provisioning_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
)

func TestBatchWindows(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := provisioning.NewBatcher(clk, time.Second, 3*time.Second)
	if _, open := b.TimeLeft(); open {
		t.Fatal("a batch is open before any trigger")
	}
	b.Trigger("pod-0")
	if left, open := b.TimeLeft(); !open || left != time.Second {
		t.Fatalf("after one trigger: left %v open %v, want 1s true", left, open)
	}
	// A new pod every 900ms keeps the batch from going idle, until max duration.
	for i := 1; i <= 3; i++ {
		clk.Step(900 * time.Millisecond)
		b.Trigger(types.UID(fmt.Sprintf("pod-%d", i)))
	}
	if left, _ := b.TimeLeft(); left != 300*time.Millisecond {
		t.Fatalf("at 2.7s with triggers: left %v, want 300ms (max duration)", left)
	}
	clk.Step(300 * time.Millisecond)
	if left, _ := b.TimeLeft(); left > 0 {
		t.Fatalf("at max duration: left %v, want due", left)
	}
}

// TestTriggersOfAPodAlreadyInTheBatchDoNotHoldItOpen: a pending pod is updated again and again while it
// waits (kube-scheduler attempts, hints); only a pod new to the batch, or a keyless trigger, extends it.
func TestTriggersOfAPodAlreadyInTheBatchDoNotHoldItOpen(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := provisioning.NewBatcher(clk, time.Second, 10*time.Second)
	b.Trigger("a")
	clk.Step(900 * time.Millisecond)
	b.Trigger("a")
	if left, _ := b.TimeLeft(); left != 100*time.Millisecond {
		t.Fatalf("after a second trigger of the same pod: left %v, want 100ms (idle from its first trigger)", left)
	}
	b.Trigger("b")
	if left, _ := b.TimeLeft(); left != time.Second {
		t.Fatalf("after a new pod: left %v, want 1s", left)
	}
	clk.Step(900 * time.Millisecond)
	b.TriggerNow()
	if left, _ := b.TimeLeft(); left != time.Second {
		t.Fatalf("after a keyless trigger: left %v, want 1s", left)
	}
	// Once the batch has closed, the same pod opens the next one.
	clk.Step(time.Second)
	done := waitAsync(context.Background(), b)
	if ok := <-done; !ok {
		t.Fatal("Wait reported false")
	}
	b.Trigger("a")
	if left, open := b.TimeLeft(); !open || left != time.Second {
		t.Fatalf("the same pod after the batch closed: left %v open %v, want a new batch", left, open)
	}
}

// TestRemindersOpenABatchButDoNotHoldItOpen: a pod some pass already planned reminds the batcher while it
// waits; that opens a batch, which closes at MaxDuration unless new pods arrive, and never keeps a batch
// from going idle.
func TestRemindersOpenABatchButDoNotHoldItOpen(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := provisioning.NewBatcher(clk, time.Second, 10*time.Second)
	b.Remind()
	if left, open := b.TimeLeft(); !open || left != 10*time.Second {
		t.Fatalf("after a reminder: left %v open %v, want a batch closing at max duration", left, open)
	}
	clk.Step(2 * time.Second)
	b.Remind()
	if left, _ := b.TimeLeft(); left != 8*time.Second {
		t.Fatalf("after a second reminder: left %v, want 8s (max duration from the first)", left)
	}
	b.Trigger("new")
	if left, _ := b.TimeLeft(); left != time.Second {
		t.Fatalf("after a new pod: left %v, want 1s (idle)", left)
	}
	clk.Step(900 * time.Millisecond)
	b.Remind()
	if left, _ := b.TimeLeft(); left != 100*time.Millisecond {
		t.Fatalf("a reminder after a new pod: left %v, want 100ms (idle from the new pod)", left)
	}
	clk.Step(100 * time.Millisecond)
	if ok := <-waitAsync(context.Background(), b); !ok {
		t.Fatal("Wait reported false")
	}
	if _, open := b.TimeLeft(); open {
		t.Fatal("the closed batch is still open")
	}
}

// waitAsync runs b.Wait in the background and returns a channel that receives its result.
func waitAsync(ctx context.Context, b *provisioning.Batcher) <-chan bool {
	done := make(chan bool, 1)
	go func() { done <- b.Wait(ctx) }()
	return done
}

// awaitTimer blocks until the batcher's goroutine has armed its timer on the fake clock.
func awaitTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	for i := 0; !clk.HasWaiters(); i++ {
		if i > 10000 {
			t.Fatal("batcher never armed a timer")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWaitReturnsWhenBatchCloses(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := provisioning.NewBatcher(clk, time.Second, 10*time.Second)
	done := waitAsync(context.Background(), b)
	b.Trigger("pod")
	awaitTimer(t, clk)
	clk.Step(time.Second)
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("Wait reported false")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the idle window")
	}
	if _, open := b.TimeLeft(); open {
		t.Fatal("the closed batch is still open")
	}
}

func TestWaitStopsWithContext(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := provisioning.NewBatcher(clk, time.Second, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := waitAsync(ctx, b)
	cancel()
	if <-done {
		t.Fatal("Wait reported a batch after the context ended")
	}
}
