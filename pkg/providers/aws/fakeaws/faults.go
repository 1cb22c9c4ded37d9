package fakeaws

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// faults holds the injected failures and counts calls, per service and action.
type faults struct {
	mu      sync.Mutex
	rules   map[callKey][]*fault
	latency map[callKey]time.Duration
	calls   map[callKey]int
}

type callKey struct{ service, action string }

// fault answers the next remaining calls (all of them when remaining is negative) with err.
type fault struct {
	err       apiError
	remaining int
}

// before counts a call and returns the error a fault injects into it, after any injected latency.
func (f *faults) before(ctx context.Context, service, action string) *apiError {
	k := callKey{service, action}
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[callKey]int{}
	}
	f.calls[k]++
	delay := f.latency[k] + f.latency[callKey{service, "*"}]
	var out *apiError
	for _, rule := range append(f.rules[k], f.rules[callKey{service, "*"}]...) {
		if rule.remaining == 0 {
			continue
		}
		if rule.remaining > 0 {
			rule.remaining--
		}
		e := rule.err
		out = &e
		break
	}
	f.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return out
}

// Faults injects failures into a Server's answers. Service is the SigV4 service name ("ec2", "ssm",
// "iam", "pricing", "eks"); action the API action ("CreateFleet", "GetParameter", "DescribeCluster"),
// or "*" for every action of the service.
type Faults struct{ s *faults }

// Fail answers the next n calls (every call when n < 0) with the error code, message and HTTP status.
func (f *Faults) Fail(service, action, code, message string, status, n int) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if f.s.rules == nil {
		f.s.rules = map[callKey][]*fault{}
	}
	k := callKey{service, action}
	f.s.rules[k] = append(f.s.rules[k], &fault{err: apiError{Code: code, Message: message, Status: status}, remaining: n})
}

// Throttle answers the next n calls (every call when n < 0) with the service's throttling error, which
// the SDK retries with backoff.
func (f *Faults) Throttle(service, action string, n int) {
	switch service {
	case "ec2":
		f.Fail(service, action, "RequestLimitExceeded", "Request limit exceeded.", http.StatusServiceUnavailable, n)
	case "iam":
		f.Fail(service, action, "Throttling", "Rate exceeded", http.StatusBadRequest, n)
	case "eks":
		f.Fail(service, action, "TooManyRequestsException", "Rate exceeded", http.StatusTooManyRequests, n)
	default:
		f.Fail(service, action, "ThrottlingException", "Rate exceeded", http.StatusBadRequest, n)
	}
}

// Latency delays every call of the action by d (on the real clock, as a network would).
func (f *Faults) Latency(service, action string, d time.Duration) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if f.s.latency == nil {
		f.s.latency = map[callKey]time.Duration{}
	}
	f.s.latency[callKey{service, action}] = d
}

// Clear removes every injected fault and latency (call counts stay).
func (f *Faults) Clear() {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	f.s.rules, f.s.latency = nil, nil
}

// Calls is how many calls of the action the fake has received, failed ones included.
func (f *Faults) Calls(service, action string) int {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	return f.s.calls[callKey{service, action}]
}
