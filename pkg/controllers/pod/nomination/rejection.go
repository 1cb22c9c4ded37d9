package nomination

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// The kube-scheduler tries a pod's hinted Node first and clears the hint when the attempt fails. While the
// Node is held that is expected (the attempt cannot succeed, and Lathe writes the hint again); once the Node
// is open, a cleared hint is the kube-scheduler's verdict that the pod cannot go there (a topology spread
// skew or an anti-affinity term that the order of bindings made fail, room taken by a pod placed off its
// plan). Lathe then ends the pod's nomination (state.Cluster.Reject) instead of writing the hint again, and
// hands the pod to the provisioner (Replanner): the next provisioning pass plans it anew, rather than after
// the nomination window.

// rejectAfter is how long after Lathe saw a Node open a hint to it cleared counts as a rejection: an attempt
// the kube-scheduler began on a snapshot from before the opening clears the hint a moment later too.
const rejectAfter = 2 * time.Second

// openingsKept is how long an opening is remembered. A Node deleted without Lathe seeing it being deleted
// (no finalizer) is forgotten then; one still there is looked up again when a hint to it is cleared.
const openingsKept = 10 * time.Minute

// openings remembers when Lathe first saw each Node open: initialized (see open).
type openings struct {
	mu sync.Mutex
	at map[string]time.Time
}

func newOpenings() *openings { return &openings{at: map[string]time.Time{}} }

// see records the Node's opening, at now, the first time it is seen open, and forgets a Node being deleted.
func (o *openings) see(node *corev1.Node, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case node.DeletionTimestamp != nil:
		delete(o.at, node.Name)
	case open(node):
		if _, ok := o.at[node.Name]; !ok {
			for name, at := range o.at {
				if now.Sub(at) > openingsKept {
					delete(o.at, name)
				}
			}
			o.at[node.Name] = now
		}
	}
}

// openFor returns how long the Node has been seen open at now; zero when it has not.
func (o *openings) openFor(name string, now time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	at, ok := o.at[name]
	if !ok {
		return 0
	}
	return now.Sub(at)
}

// open reports whether the kube-scheduler may place pods on the Node as far as Lathe knows: Lathe labelled
// it initialized, so it is registered, Ready, and has shed its NodeClaim's startup taints and the known
// ephemeral taints (node.kubernetes.io/not-ready among them). A Node registered but not initialized still
// refuses every pod, and a hint to it that the kube-scheduler clears is no verdict on the plan.
func open(node *corev1.Node) bool {
	return node.Labels[v1.NodeInitializedLabelKey] == "true"
}

// rejected reports whether the kube-scheduler's clearing of the hint it was told (node) is a rejection, and
// if so ends the pod's nomination. A Node not seen open before (Lathe restarted, or its event is still on
// the way) is looked up and counts as opening now.
func (c *Controller) rejected(ctx context.Context, pod types.NamespacedName, node string) (bool, error) {
	now := c.clock.Now()
	if c.opened.openFor(node, now) == 0 {
		n := &corev1.Node{}
		if err := c.client.Get(ctx, types.NamespacedName{Name: node}, n); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, fmt.Errorf("getting node %s, %w", node, err)
		}
		c.opened.see(n, now)
	}
	return c.opened.openFor(node, now) >= rejectAfter && c.nominations.Reject(pod, node), nil
}
