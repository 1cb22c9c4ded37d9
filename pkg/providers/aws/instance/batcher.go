package instance

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Batch windows of CreateFleet, as Karpenter's AWS provider uses: a batch closes once no identical request
// arrived for BatchIdle, or BatchMax after it opened.
const (
	BatchIdle = 35 * time.Millisecond
	BatchMax  = time.Second
)

// batcher gathers identical launch requests (equal keys) that arrive close together, so that one
// CreateFleet launches them all. The windows run on real timers: they trade latency for fewer API calls
// and decide nothing.
type batcher struct {
	idle, max time.Duration
	exec      func(ctx context.Context, reqs []*launchRequest)
	// window and size observe each batch's open time and request count.
	window, size prometheus.Observer

	mu   sync.Mutex
	open map[string]*batch
}

type batch struct {
	reqs   []*launchRequest
	poke   chan struct{}
	opened time.Time
}

// newBatcher returns a batcher named name in m's karpenter_cloudprovider_batcher_* metrics.
func newBatcher(name string, m *Metrics, idle, max time.Duration, exec func(context.Context, []*launchRequest)) *batcher {
	return &batcher{idle: idle, max: max, exec: exec, open: map[string]*batch{},
		window: m.batchTime.WithLabelValues(name), size: m.batchSize.WithLabelValues(name)}
}

// add queues the request in the batch of its key and waits for its result.
func (b *batcher) add(ctx context.Context, key string, req *launchRequest) launchResult {
	req.done = make(chan launchResult, 1)
	if b.idle <= 0 {
		b.exec(ctx, []*launchRequest{req})
		return <-req.done
	}
	b.mu.Lock()
	bt, ok := b.open[key]
	if !ok {
		bt = &batch{poke: make(chan struct{}, 1), opened: time.Now()}
		b.open[key] = bt
		go b.run(context.WithoutCancel(ctx), key, bt)
	}
	bt.reqs = append(bt.reqs, req)
	b.mu.Unlock()
	select {
	case bt.poke <- struct{}{}:
	default:
	}
	select {
	case r := <-req.done:
		return r
	case <-ctx.Done():
		return launchResult{err: ctx.Err()}
	}
}

// run closes the batch when it has been idle or open long enough, and executes it.
func (b *batcher) run(ctx context.Context, key string, bt *batch) {
	idle, max := time.NewTimer(b.idle), time.NewTimer(b.max)
	defer idle.Stop()
	defer max.Stop()
wait:
	for {
		select {
		case <-bt.poke:
			idle.Reset(b.idle)
		case <-idle.C:
			break wait
		case <-max.C:
			break wait
		}
	}
	b.mu.Lock()
	delete(b.open, key)
	reqs := bt.reqs
	b.mu.Unlock()
	b.window.Observe(time.Since(bt.opened).Seconds())
	b.size.Observe(float64(len(reqs)))
	b.exec(ctx, reqs)
}
