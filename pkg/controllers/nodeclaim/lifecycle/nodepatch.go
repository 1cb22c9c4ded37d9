package lifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
)

// freshRetries is how many times patchNode reads a Node from the API server and makes its change again after
// a write conflict.
const freshRetries = 2

// nodeFields are the fields of a Node that registration writes, and how each write is guarded
// (pkg/fieldpatch): labels and annotations entry by entry, the lists whole.
var nodeFields = []fieldpatch.Field{
	fieldpatch.Keys("metadata", "labels"),
	fieldpatch.Keys("metadata", "annotations"),
	fieldpatch.Whole("metadata", "finalizers"),
	fieldpatch.Whole("metadata", "ownerReferences"),
	fieldpatch.Whole("spec", "taints"),
}

// patchNode makes change on node and writes the result as a JSON patch in which each changed field is
// guarded by its value in node (pkg/fieldpatch): a patch that replaces the taint list loses only to another
// writer's change of the taints, and a kubelet heartbeat or the node lifecycle controller's label in between
// no longer makes it fail, as the optimistic lock on the whole Node did. change reports whether it changed
// anything; nothing is written when it did not.
//
// Under load the cache shows a new Node seconds late, so a write built on the cached copy can still lose
// when the copy predates a change of the same field. On a conflict the Node is read from the API server
// through reader and the change made again on that copy, up to freshRetries times; the conflict is returned
// when every attempt lost. node ends as written, or as last read; a write is kept in written for claim.
func patchNode(ctx context.Context, kube client.Client, reader client.Reader, written *written[*corev1.Node], claim string,
	node *corev1.Node, change func(*corev1.Node) (bool, error)) (bool, error) {
	for attempt := 0; ; attempt++ {
		stored := node.DeepCopy()
		changed, err := change(node)
		if err != nil || !changed {
			return false, err
		}
		err = fieldpatch.Patch(ctx, kube, node, stored, nodeFields...)
		if err == nil {
			written.store(claim, node)
			return true, nil
		}
		if !apierrors.IsConflict(err) || attempt == freshRetries {
			return false, err
		}
		fresh := &corev1.Node{}
		if err := reader.Get(ctx, client.ObjectKeyFromObject(stored), fresh); err != nil {
			return false, fmt.Errorf("reading node %s after a write conflict, %w", stored.Name, err)
		}
		*node = *fresh
	}
}
