package provisioning

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// unplanned knows which pending pods have asked for capacity since the last pass that read them: the part
// of a burst that no plan covers yet. Registration holds new Nodes while there is one (Planning), so that
// the Nodes of the first pass do not open before the next pass has planned the rest of the burst.
//
// A pod the last pass read (planned, found no room for, or left alone) is not new when it triggers again: the
// kube-scheduler updates a pending pod at every attempt, and each update triggers.
type unplanned struct {
	mu sync.Mutex
	// waiting are the pods, by UID, that triggered and that no pass has read since.
	waiting map[types.UID]struct{}
	// read are the unbound pods the last pass that solved read.
	read map[types.UID]struct{}
	// passTookPods records that the pass under way took in waiting pods: they are not planned until it ends.
	passTookPods bool
}

func newUnplanned() *unplanned {
	return &unplanned{waiting: map[types.UID]struct{}{}, read: map[types.UID]struct{}{}}
}

// triggered records that the pending pod asked for capacity.
func (u *unplanned) triggered(pod types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, known := u.read[pod]; !known {
		u.waiting[pod] = struct{}{}
	}
}

// startPass takes in the waiting pods for the pass that starts, and returns them for endPass.
func (u *unplanned) startPass() map[types.UID]struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	taken := u.waiting
	u.waiting = map[types.UID]struct{}{}
	u.passTookPods = len(taken) > 0
	return taken
}

// endPass records the end of the pass that took taken in. read are the unbound pods it read, nil when it
// solved nothing (it failed before): then the pods it took in wait for the next pass. A pod taken in but
// not read is no longer pending (bound, deleted) and is forgotten; a pod read that triggered during the
// pass was planned by it.
func (u *unplanned) endPass(taken, read map[types.UID]struct{}) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.passTookPods = false
	if read == nil {
		for pod := range taken {
			u.waiting[pod] = struct{}{}
		}
		return
	}
	u.read = read
	for pod := range read {
		delete(u.waiting, pod)
	}
}

// planning reports whether a pending pod waits for a pass, or the pass under way has not planned the
// pods it took in yet.
func (u *unplanned) planning() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.waiting) > 0 || u.passTookPods
}

// unboundUIDs are the UIDs of the pods a pass read that are not bound yet: of pods, the pass's pending pods
// and those nominated to a node or an in-flight NodeClaim (pendingInput), the unbound ones; and the pods it
// leaves alone (ignored).
func unboundUIDs(pods []*corev1.Pod, ignored []IgnoredPod) map[types.UID]struct{} {
	uids := make(map[types.UID]struct{}, len(pods)+len(ignored))
	for _, pod := range pods {
		if awaitsBinding(pod) {
			uids[pod.UID] = struct{}{}
		}
	}
	for _, i := range ignored {
		uids[i.Pod.UID] = struct{}{}
	}
	return uids
}
