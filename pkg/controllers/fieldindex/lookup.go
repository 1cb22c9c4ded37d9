package fieldindex

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// BelongsTo reports whether the Node is the NodeClaim's instance: the same provider ID, or, while either has
// none yet, the Node's name is the claim's status.nodeName.
func BelongsTo(node *corev1.Node, nodeClaim *v1.NodeClaim) bool {
	if node.Spec.ProviderID != "" && nodeClaim.Status.ProviderID != "" {
		return node.Spec.ProviderID == nodeClaim.Status.ProviderID
	}
	return nodeClaim.Status.NodeName != "" && node.Name == nodeClaim.Status.NodeName
}

// NodeClaimsForNode returns the NodeClaims the Node belongs to (see BelongsTo), those matched by provider ID
// first, through the NodeClaim indexes.
func NodeClaimsForNode(ctx context.Context, reader client.Reader, node *corev1.Node) ([]*v1.NodeClaim, error) {
	lookups := []client.MatchingFields{{NodeClaimNodeName: node.Name}}
	if node.Spec.ProviderID != "" {
		lookups = append([]client.MatchingFields{{NodeClaimProviderID: node.Spec.ProviderID}}, lookups...)
	}
	var out []*v1.NodeClaim
	seen := map[string]bool{}
	for _, by := range lookups {
		list := &v1.NodeClaimList{}
		if err := reader.List(ctx, list, by); err != nil {
			return nil, fmt.Errorf("listing nodeclaims of node %s, %w", node.Name, err)
		}
		for i := range list.Items {
			if nc := &list.Items[i]; !seen[nc.Name] && BelongsTo(node, nc) {
				seen[nc.Name] = true
				out = append(out, nc)
			}
		}
	}
	return out, nil
}

// NodesForNodeClaim returns the Nodes of the NodeClaim (see BelongsTo), through the Node index.
func NodesForNodeClaim(ctx context.Context, reader client.Reader, nodeClaim *v1.NodeClaim) ([]*corev1.Node, error) {
	var out []*corev1.Node
	if id := nodeClaim.Status.ProviderID; id != "" {
		list := &corev1.NodeList{}
		if err := reader.List(ctx, list, client.MatchingFields{NodeProviderID: id}); err != nil {
			return nil, fmt.Errorf("listing nodes with provider id %s, %w", id, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	if name := nodeClaim.Status.NodeName; name != "" {
		node := &corev1.Node{}
		err := reader.Get(ctx, client.ObjectKey{Name: name}, node)
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("getting node %s, %w", name, err)
		}
		if !apierrors.IsNotFound(err) && BelongsTo(node, nodeClaim) && (node.Spec.ProviderID == "" || nodeClaim.Status.ProviderID == "") {
			out = append(out, node)
		}
	}
	return out, nil
}
