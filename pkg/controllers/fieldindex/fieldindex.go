// Package fieldindex owns the field indexes the controllers add to the manager's cache, so that finding
// the NodeClaim of a Node, the Node of a NodeClaim, or the pods or VolumeAttachments of a Node is a lookup
// instead of a list of every object on each reconcile.
//
// Every controller that reads through an index calls Register from its own Register; the indexes are added
// to a manager's cache once, however many controllers ask.
package fieldindex

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// The index names. PodNodeName is also a field selector the API server serves, so a List that uses it works
// against the API server as well as against the cache.
const (
	// NodeClaimProviderID indexes NodeClaims by status.providerID.
	NodeClaimProviderID = "status.providerID"
	// NodeClaimNodeName indexes NodeClaims by status.nodeName.
	NodeClaimNodeName = "status.nodeName"
	// NodeProviderID indexes Nodes by spec.providerID.
	NodeProviderID = "spec.providerID"
	// PodNodeName indexes Pods by spec.nodeName.
	PodNodeName = "spec.nodeName"
	// PodNominatedNodeName indexes unbound Pods by status.nominatedNodeName: the pods headed to a Node. The
	// API server serves no such field selector; it works against the cache only.
	PodNominatedNodeName = "status.nominatedNodeName"
	// VolumeAttachmentNodeName indexes VolumeAttachments by spec.nodeName.
	VolumeAttachmentNodeName = "spec.nodeName"
)

// Index is one field index: the objects it applies to, its name, and the values an object is found by.
type Index struct {
	Object  client.Object
	Field   string
	Extract client.IndexerFunc
}

// Indexes are every index Register adds.
func Indexes() []Index {
	return []Index{
		{&v1.NodeClaim{}, NodeClaimProviderID, func(o client.Object) []string { return nonEmpty(o.(*v1.NodeClaim).Status.ProviderID) }},
		{&v1.NodeClaim{}, NodeClaimNodeName, func(o client.Object) []string { return nonEmpty(o.(*v1.NodeClaim).Status.NodeName) }},
		{&corev1.Node{}, NodeProviderID, func(o client.Object) []string { return nonEmpty(o.(*corev1.Node).Spec.ProviderID) }},
		{&corev1.Pod{}, PodNodeName, func(o client.Object) []string { return nonEmpty(o.(*corev1.Pod).Spec.NodeName) }},
		{&corev1.Pod{}, PodNominatedNodeName, func(o client.Object) []string {
			if pod := o.(*corev1.Pod); pod.Spec.NodeName == "" {
				return nonEmpty(pod.Status.NominatedNodeName)
			}
			return nil
		}},
		{&storagev1.VolumeAttachment{}, VolumeAttachmentNodeName, func(o client.Object) []string {
			return nonEmpty(o.(*storagev1.VolumeAttachment).Spec.NodeName)
		}},
	}
}

var (
	mu         sync.Mutex
	registered = map[client.FieldIndexer]bool{}
)

// Register adds every index to the indexer (a manager's GetFieldIndexer()), unless it already has them.
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	mu.Lock()
	defer mu.Unlock()
	if registered[indexer] {
		return nil
	}
	for _, ix := range Indexes() {
		if err := indexer.IndexField(ctx, ix.Object, ix.Field, ix.Extract); err != nil {
			return fmt.Errorf("indexing %T by %s, %w", ix.Object, ix.Field, err)
		}
	}
	registered[indexer] = true
	return nil
}

func nonEmpty(value string) []string {
	if value == "" {
		return nil
	}
	return []string{value}
}
