package provisioning

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func uids(pods ...types.UID) map[types.UID]struct{} {
	set := map[types.UID]struct{}{}
	for _, p := range pods {
		set[p] = struct{}{}
	}
	return set
}

func TestUnplannedCountsPodsUntilAPassHasReadThem(t *testing.T) {
	u := newUnplanned()
	if u.planning() {
		t.Fatal("planning before any pod triggered")
	}
	u.triggered("a")
	if !u.planning() {
		t.Fatal("a triggered pod no pass has read is not waiting")
	}
	taken := u.startPass()
	if !u.planning() {
		t.Error("the pass under way has not planned the pod it took in, yet nothing is planning")
	}
	u.triggered("a") // the kube-scheduler tried the pod again while the pass planned it
	u.triggered("b") // a new pod, after the pass read its input
	u.endPass(taken, uids("a"))
	if !u.planning() {
		t.Fatal("a pod that triggered after the pass read its input is not waiting")
	}
	u.triggered("a")
	taken = u.startPass()
	u.endPass(taken, uids("a", "b"))
	if u.planning() {
		t.Fatal("still planning once a pass has read every triggered pod")
	}
	u.triggered("a")
	u.triggered("b")
	if u.planning() {
		t.Error("the kube-scheduler's attempts at pods a pass has read count as new pods")
	}
}

func TestUnplannedKeepsThePodsOfAFailedPass(t *testing.T) {
	u := newUnplanned()
	u.triggered("a")
	u.endPass(u.startPass(), nil)
	if !u.planning() {
		t.Fatal("a pass that failed before planning dropped the pod it took in")
	}
	// A pod taken in but not read by a pass that planned is no longer pending (bound or deleted).
	u.endPass(u.startPass(), uids())
	if u.planning() {
		t.Error("a pod no longer pending keeps the provisioner planning")
	}
}
