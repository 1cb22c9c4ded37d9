package capacityreservation

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// States of a reservation in the node class status.
const (
	StateActive = "active"
	// StateExpiring is a capacity block within expiringWindow of its end: nothing more launches into it, and
	// its nodes are drained.
	StateExpiring = "expiring"
)

// expiringWindow is how long before its end a capacity block counts as expiring.
const expiringWindow = 40 * time.Minute

func metav1Time(t time.Time) metav1.Time { return metav1.NewTime(t) }
