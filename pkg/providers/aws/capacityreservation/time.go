package capacityreservation

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// expiringWindow is how long before its end a capacity block counts as expiring.
const expiringWindow = 40 * time.Minute

func metav1Time(t time.Time) metav1.Time { return metav1.NewTime(t) }
