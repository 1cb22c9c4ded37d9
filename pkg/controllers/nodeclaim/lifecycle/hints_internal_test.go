package lifecycle

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// unhinted is a fixed count of pods without their hint.
type unhinted int

func (u unhinted) Unhinted(context.Context, string, string) (int, error) { return int(u), nil }

func TestRegistrationWaitsForHints(t *testing.T) {
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-a"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(now)}}
	cases := []struct {
		name  string
		hints Hints
		first bool
		age   time.Duration
		wait  bool
	}{
		{"pods not hinted yet", unhinted(2), true, time.Second, true},
		{"every pod hinted", unhinted(0), true, time.Second, false},
		{"waited long enough", unhinted(2), true, HintWait, false},
		{"already registered", unhinted(2), false, time.Second, false},
		{"no hints", nil, true, time.Second, false},
	}
	for _, c := range cases {
		r := &registration{clock: clocktesting.NewFakeClock(now.Add(c.age)), hints: c.hints}
		wait, err := r.awaitHints(context.Background(), claim, node, c.first)
		if err != nil || (wait > 0) != c.wait {
			t.Errorf("%s: wait %v, err %v; want waiting %v", c.name, wait, err, c.wait)
		}
	}
}
