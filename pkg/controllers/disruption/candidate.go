package disruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// View is everything a disruption decision reads, taken once per pass: a cluster state snapshot, the
// NodePools and what they may launch, the volumes that pin pods to zones, the time, and the nodes the
// orchestration queue is already working on. Decisions are pure functions of a View.
type View struct {
	Snapshot *state.Snapshot
	// NodePools by name: every pool, including those new capacity may not come from (a candidate of a
	// pool that is not ready can still be removed).
	NodePools map[string]*v1.NodePool
	// InstanceTypes by NodePool name.
	InstanceTypes map[string]cloudprovider.InstanceTypes
	// LaunchablePools are the pools replacements may come from (ready, not static, not being deleted).
	LaunchablePools []*v1.NodePool
	Volumes         solver.Volumes
	Now             time.Time
	// Busy holds the provider IDs of nodes a command in the orchestration queue owns.
	Busy map[string]bool
	// Pending are the pods the provisioner has yet to place (provisioning.PendingPods): simulations place
	// them too, so that consolidation leaves them their room.
	Pending []*corev1.Pod
}

// Candidate is a node that voluntary disruption may remove.
type Candidate struct {
	*state.StateNode
	NodePool *v1.NodePool
	// InstanceType is the node's type in its pool's catalog, nil when the catalog no longer has it.
	InstanceType *cloudprovider.InstanceType
	Zone         string
	CapacityType string
	// Price is the node's hourly price: its offering for its zone and capacity type (0 when unknown).
	Price float64
	// ReschedulablePods must find room elsewhere when the node goes.
	ReschedulablePods []*corev1.Pod
	// DisruptionCost orders candidates, cheapest to disrupt first (upstream's formula: the summed eviction
	// cost of the pods times the fraction of lifetime left before expiry).
	DisruptionCost float64
}

// Name is the node's name.
func (c *Candidate) Name() string { return c.Node.Name }

// Empty reports whether removing the node displaces nothing that costs to move: no reschedulable pod with
// a positive eviction cost.
func (c *Candidate) Empty() bool {
	for _, p := range c.ReschedulablePods {
		if EvictionCost(p) > 0 {
			return false
		}
	}
	return true
}

// Blocked is a managed node that cannot be disrupted, and why.
type Blocked struct {
	Node      *corev1.Node
	NodeClaim *v1.NodeClaim
	Reason    string
}

// InvalidAnnotation is a pod whose do-not-disrupt annotation cannot be read.
type InvalidAnnotation struct {
	Pod *corev1.Pod
	Err error
}

// Class says what may block a candidate. Graceful disruption (emptiness, consolidation) respects
// do-not-disrupt and PDBs; eventual disruption (drift) does too, except for claims with a
// terminationGracePeriod, whose drain ends at that deadline anyway.
type Class int

const (
	Graceful Class = iota
	Eventual
)

// Candidates sorts the snapshot's managed nodes into candidates and blocked nodes. Unmanaged nodes, nodes
// the queue owns and nodes already being deleted are neither. Nodes are kept in snapshot order.
func Candidates(v *View, class Class) ([]*Candidate, []Blocked, []InvalidAnnotation) {
	pdbs := newPDBLimits(v.Snapshot.PDBs)
	var cands []*Candidate
	var blocked []Blocked
	var invalid []InvalidAnnotation
	for _, n := range v.Snapshot.Nodes {
		if n.NodeClaim == nil || v.Busy[n.ProviderID] || n.MarkedForDeletion {
			continue
		}
		c, why, bad := candidate(v, n, pdbs, class)
		invalid = append(invalid, bad...)
		if why != "" {
			blocked = append(blocked, Blocked{Node: n.Node, NodeClaim: n.NodeClaim, Reason: why})
			continue
		}
		cands = append(cands, c)
	}
	return cands, blocked, invalid
}

// candidate builds the node's candidate, or says why it is blocked.
func candidate(v *View, n *state.StateNode, pdbs pdbLimits, class Class) (*Candidate, string, []InvalidAnnotation) {
	switch {
	case !meta.IsStatusConditionTrue(n.NodeClaim.Status.Conditions, v1.ConditionTypeInitialized):
		return nil, "node isn't initialized", nil
	case n.Node.Annotations[v1.DoNotDisruptAnnotationKey] == "true":
		return nil, fmt.Sprintf("disruption is blocked through the %q annotation", v1.DoNotDisruptAnnotationKey), nil
	case n.NodePool == "":
		return nil, fmt.Sprintf("node doesn't have required label %q", v1.NodePoolLabelKey), nil
	case len(n.Nominated) > 0:
		// pkg/state owns which nominations still hold; a pod headed here would need room again elsewhere.
		return nil, "node is nominated for a pending pod", nil
	}
	pool := v.NodePools[n.NodePool]
	if pool == nil {
		return nil, fmt.Sprintf("NodePool not found (NodePool=%s)", n.NodePool), nil
	}
	graceful := class == Graceful || n.NodeClaim.Spec.TerminationGracePeriod == nil
	var invalid []InvalidAnnotation
	var reschedulable []*corev1.Pod
	cost := 0.0
	for _, p := range n.Pods {
		on, err := doNotDisrupt(p, v.Now)
		if err != nil {
			invalid = append(invalid, InvalidAnnotation{Pod: p, Err: err})
		}
		if on && active(p) && graceful {
			return nil, fmt.Sprintf("pod %s/%s has %q annotation", p.Namespace, p.Name, v1.DoNotDisruptAnnotationKey), invalid
		}
		if Reschedulable(p) {
			if reschedulable == nil {
				reschedulable = make([]*corev1.Pod, 0, len(n.Pods))
			}
			reschedulable = append(reschedulable, p)
		}
		cost += EvictionCost(p)
	}
	if graceful {
		if why := pdbs.blocking(n.Pods, v.Now); why != "" {
			return nil, why, invalid
		}
	}
	c := &Candidate{
		StateNode:         n,
		NodePool:          pool,
		Zone:              n.Labels[v1.LabelTopologyZone],
		CapacityType:      n.Labels[v1.CapacityTypeLabelKey],
		ReschedulablePods: reschedulable,
		DisruptionCost:    cost * lifetimeRemaining(n.NodeClaim, v.Now),
	}
	c.InstanceType, c.Price = price(v.InstanceTypes[n.NodePool], n.Labels)
	return c, "", invalid
}

// price finds the node's instance type in the catalog and the price of its offering in its zone and
// capacity type.
func price(its cloudprovider.InstanceTypes, labels map[string]string) (*cloudprovider.InstanceType, float64) {
	for _, it := range its {
		if it.Name != labels[v1.LabelInstanceType] {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == labels[v1.LabelTopologyZone] && o.CapacityType == labels[v1.CapacityTypeLabelKey] {
				return it, o.Price
			}
		}
		return it, 0
	}
	return nil, 0
}
