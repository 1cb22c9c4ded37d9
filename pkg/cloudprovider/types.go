package cloudprovider

import (
	"context"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// CloudProvider launches, finds and removes the instances behind NodeClaims, and describes what can be
// launched. Implementations must be safe for concurrent use.
type CloudProvider interface {
	// Create launches an instance for the NodeClaim and returns a copy of it with status.providerID,
	// status.capacity, status.allocatable and the labels of what was launched filled in. The NodeClaim's
	// requirements bound the choice (instance types, zones, capacity types). Create must be idempotent per
	// NodeClaim: retrying after an error never leaves two instances. It returns an InsufficientCapacityError
	// when no offering the requirements allow has capacity (the caller deletes the NodeClaim so that its pods
	// are scheduled again), a NodeClassNotReadyError when the node class can't be used yet (the caller
	// deletes the NodeClaim, as for insufficient capacity, and provisions again), and a CreateError for other failures it wants surfaced with a reason.
	Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error)
	// Delete terminates the NodeClaim's instance. It returns a NodeClaimNotFoundError once the instance is
	// gone; until then the caller keeps calling Delete (termination is asynchronous), so a nil error means
	// "termination in progress".
	Delete(ctx context.Context, nodeClaim *v1.NodeClaim) error
	// Get returns a NodeClaim describing the instance with the provider ID, or a NodeClaimNotFoundError.
	Get(ctx context.Context, providerID string) (*v1.NodeClaim, error)
	// List returns a NodeClaim for every instance the provider manages for this cluster, including ones no
	// NodeClaim object refers to (garbage collection relies on this).
	List(ctx context.Context) ([]*v1.NodeClaim, error)
	// GetInstanceTypes returns the instance types the NodePool may launch, with their current offerings.
	// Offerings that recently failed with insufficient capacity are returned with Available false.
	GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*InstanceType, error)
	// IsDrifted reports why the NodeClaim's instance no longer matches its node class, or "" when it
	// matches.
	IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (DriftReason, error)
	// RepairPolicies lists the node conditions that make a node unhealthy and how long they may last before
	// the node is replaced.
	RepairPolicies() []RepairPolicy
	// Name identifies the provider, for example "aws".
	Name() string
}

// DriftReason says why an instance drifted from its node class, for example "AMIDrift". Empty means not
// drifted.
type DriftReason string
