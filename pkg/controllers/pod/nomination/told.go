package nomination

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// toldHints remembers, per pending pod, the Node its hint last named when Lathe wrote it or saw it in place,
// and the resourceVersion of the pod that named it.
//
// The version tells a stale cache from the kube-scheduler's verdict. Lathe reads pods from the manager's
// cache, which sees Lathe's own status writes only when their watch events arrive: a second or two behind
// while a pass's hundreds of hints are written. A pod read in that gap still shows the hint unset, which
// would otherwise count as the kube-scheduler clearing it (rejected), ending a nomination the kube-scheduler
// never judged.
type toldHints struct {
	mu sync.Mutex
	at map[types.NamespacedName]told
}

// told is one pod's last hint: the Node, and the resourceVersion of the pod carrying it.
type told struct {
	node, version string
}

func newToldHints() *toldHints { return &toldHints{at: map[types.NamespacedName]told{}} }

// remember records that the pod, as read or as written, carries a hint to node.
func (t *toldHints) remember(pod *corev1.Pod, node string) {
	key := client.ObjectKeyFromObject(pod)
	t.mu.Lock()
	defer t.mu.Unlock()
	if node == "" {
		delete(t.at, key)
		return
	}
	t.at[key] = told{node: node, version: pod.ResourceVersion}
}

// forget drops what is remembered of the pod: it is bound, being deleted, or gone.
func (t *toldHints) forget(pod types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.at, pod)
}

// nodeOf returns the Node the pod's hint last named; empty when none is remembered.
func (t *toldHints) nodeOf(pod types.NamespacedName) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.at[pod].node
}

// stale reports whether the pod, as read, is older than the version in which its hint named node: the hint
// to node is in place, and the reader has not seen it yet. Versions that do not compare as integers
// (an API server that does not promise it) are never behind.
func (t *toldHints) stale(pod *corev1.Pod, node string) bool {
	t.mu.Lock()
	last, ok := t.at[client.ObjectKeyFromObject(pod)]
	t.mu.Unlock()
	if !ok || last.node != node || last.version == "" {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(pod.ResourceVersion, last.version)
	return err == nil && cmp < 0
}
