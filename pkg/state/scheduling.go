package state

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// SchedulingTimes remembers, per pending pod and in memory only, when the provisioner first took it up
// (acknowledged it), first decided on it (found it a place or found it could not be placed), and first
// found it a place since the last time it could not be placed. The pod metrics controller reads them for
// karpenter_pods_provisioning_*; the first decision is observed in
// karpenter_pods_scheduling_decision_duration_seconds. Safe for concurrent use.
type SchedulingTimes struct {
	clock    clock.Clock
	decision prometheus.Observer

	mu    sync.Mutex
	times map[types.NamespacedName]*podTimes
}

type podTimes struct {
	acked, decided, schedulable time.Time
}

func newSchedulingTimes(clk clock.Clock, decision prometheus.Observer) *SchedulingTimes {
	return &SchedulingTimes{clock: clk, decision: decision, times: map[types.NamespacedName]*podTimes{}}
}

// Ack records that the provisioner took the pod up, unless it did before.
func (s *SchedulingTimes) Ack(pod types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.entry(pod); t.acked.IsZero() {
		t.acked = s.clock.Now()
	}
}

// Decided records a scheduling pass's outcome: placed pods found room (on a node, an in-flight NodeClaim or
// a new one), failed pods found none. A pod's first decision after its acknowledgement is observed in the
// decision histogram; a failure forgets when the pod was last found a place.
func (s *SchedulingTimes) Decided(placed, failed []types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	decide := func(pod types.NamespacedName) *podTimes {
		t := s.entry(pod)
		if t.decided.IsZero() {
			t.decided = now
			if !t.acked.IsZero() {
				s.decision.Observe(now.Sub(t.acked).Seconds())
			}
		}
		return t
	}
	for _, pod := range failed {
		decide(pod).schedulable = time.Time{}
	}
	for _, pod := range placed {
		if t := decide(pod); t.schedulable.IsZero() {
			t.schedulable = now
		}
	}
}

// Times returns when the pod was acknowledged, first decided on and found a place (zero for what has not
// happened).
func (s *SchedulingTimes) Times(pod types.NamespacedName) (acked, decided, schedulable time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.times[pod]; ok {
		return t.acked, t.decided, t.schedulable
	}
	return time.Time{}, time.Time{}, time.Time{}
}

// Forget drops the pod's times, once it started, ended or was deleted.
func (s *SchedulingTimes) Forget(pod types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.times, pod)
}

func (s *SchedulingTimes) entry(pod types.NamespacedName) *podTimes {
	if s.times == nil {
		s.times = map[types.NamespacedName]*podTimes{}
	}
	t, ok := s.times[pod]
	if !ok {
		t = &podTimes{}
		s.times[pod] = t
	}
	return t
}
