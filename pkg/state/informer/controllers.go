package informer

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// Controller is what every informer controller offers the composition root.
type Controller interface {
	Name() string
	Register(ctx context.Context, mgr manager.Manager) error
}

// NewControllers returns one informer per kind, each feeding its store of cluster. reader is the
// manager's cached client.
func NewControllers(reader client.Reader, cluster *state.Cluster) []Controller {
	return []Controller{
		NewNodeController(NodeDeps{Reader: reader, Store: cluster.Nodes}),
		NewNodeClaimController(NodeClaimDeps{Reader: reader, Store: cluster.Nodes}),
		NewPodController(PodDeps{Reader: reader, Store: cluster.Pods}),
		NewDaemonSetController(DaemonSetDeps{Reader: reader, Store: cluster.DaemonSets}),
		NewPDBController(PDBDeps{Reader: reader, Store: cluster.PDBs}),
	}
}
