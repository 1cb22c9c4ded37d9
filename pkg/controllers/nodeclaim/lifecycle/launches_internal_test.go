package lifecycle

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// ProviderIDOf answers for a claim launched here until its Launched condition is seen stored.
func TestLaunchesTellTheProviderIDUntilForgotten(t *testing.T) {
	l := NewLaunches(nil)
	if got := l.ProviderIDOf("default-abc"); got != "" {
		t.Fatalf("before the launch: %q", got)
	}
	created := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abc"}}
	created.Status.ProviderID = "sim:///default-abc"
	l.put("uid-1", "default-abc", created)
	if got := l.ProviderIDOf("default-abc"); got != created.Status.ProviderID {
		t.Fatalf("after the launch: %q, want %q", got, created.Status.ProviderID)
	}
	if got := l.ProviderIDOf("default-xyz"); got != "" {
		t.Fatalf("another claim: %q", got)
	}
	l.forget("uid-1")
	if got := l.ProviderIDOf("default-abc"); got != "" {
		t.Fatalf("once forgotten: %q", got)
	}
}

// launchLog is a LaunchObserver that records what it hears.
type launchLog []string

func (l *launchLog) Launched(nodeClaim, providerID string) {
	*l = append(*l, nodeClaim+"="+providerID)
}

// The observer (the cluster state) hears of a launch as it is cached, before the claim's status is written.
func TestLaunchesTellTheObserverOfEachLaunch(t *testing.T) {
	var heard launchLog
	l := NewLaunches(&heard)
	created := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abc"}}
	created.Status.ProviderID = "sim:///default-abc"
	l.put("uid-1", "default-abc", created)
	if len(heard) != 1 || heard[0] != "default-abc=sim:///default-abc" {
		t.Fatalf("the observer heard %v, want [default-abc=sim:///default-abc]", heard)
	}
}
