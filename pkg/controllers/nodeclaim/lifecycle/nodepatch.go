package lifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// freshRetries is how many times patchNode reads a Node from the API server and makes its change again after
// a write conflict.
const freshRetries = 2

// patchNode makes change on node and writes the result with a merge patch under an optimistic lock: a merge
// patch replaces the taint, finalizer and owner-reference lists whole, and the lock keeps another writer's
// entries. change reports whether it changed anything; nothing is written when it did not.
//
// A new Node is written by several components in its first seconds (the kubelet's status, the node lifecycle
// controller's not-ready taints), and under load the cache shows it seconds late, so a write built on the
// cached copy conflicts again at every retry until the cache catches up. On a conflict the Node is read from
// the API server through reader and the change made again on that copy, up to freshRetries times; the
// conflict is returned when every attempt lost. node ends as written, or as last read.
func patchNode(ctx context.Context, kube client.Client, reader client.Reader, node *corev1.Node,
	change func(*corev1.Node) (bool, error)) (bool, error) {
	for attempt := 0; ; attempt++ {
		stored := node.DeepCopy()
		changed, err := change(node)
		if err != nil || !changed {
			return false, err
		}
		err = kube.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
		if !apierrors.IsConflict(err) || attempt == freshRetries {
			return err == nil, err
		}
		fresh := &corev1.Node{}
		if err := reader.Get(ctx, client.ObjectKeyFromObject(stored), fresh); err != nil {
			return false, fmt.Errorf("reading node %s after a write conflict, %w", stored.Name, err)
		}
		*node = *fresh
	}
}
