package state

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// Key prefixes for objects that have no provider ID yet. Provider IDs are URIs ("aws:///zone/i-..."), so
// these never collide with one.
const (
	unlaunchedClaimKeyPrefix  = "nodeclaim/"
	unidentifiedNodeKeyPrefix = "node/"
)

// NodeStore holds Nodes and NodeClaims joined by provider ID. A NodeClaim that has not been launched yet
// (no provider ID) and a Node the cloud provider has not identified yet are kept under a key derived from
// their name until their provider ID appears.
//
// A claim's provider ID is known in two ways: from its status, and from the launch itself (Launched), which
// this process learns first. Under load the claim's status reaches the informers seconds after the launch
// wrote it, while the Node, created by the launch, may already be there: keyed by the status alone, that
// machine was two entries, the claim in flight with its pods and an empty Node, and provisioning counted its
// room twice.
type NodeStore struct {
	stamp *Stamp

	mu        sync.RWMutex
	entries   map[string]*nodeEntry // by provider ID (or a name-derived key, see above)
	nodeKeys  map[string]string     // Node name → entry key
	claimKeys map[string]string     // NodeClaim name → entry key
	launched  map[string]string     // NodeClaim name → provider ID its launch returned, until its status shows one
}

// nodeEntry is one machine: its Node, its NodeClaim, or both.
type nodeEntry struct {
	node  *corev1.Node
	claim *v1.NodeClaim
}

// NewNodeStore returns an empty store that bumps stamp on every relevant change.
func NewNodeStore(stamp *Stamp) *NodeStore {
	return &NodeStore{
		stamp:     stamp,
		entries:   map[string]*nodeEntry{},
		nodeKeys:  map[string]string{},
		claimKeys: map[string]string{},
		launched:  map[string]string{},
	}
}

// UpdateNode adds or replaces a Node. The store keeps its own copy.
func (s *NodeStore) UpdateNode(node *corev1.Node) {
	node = node.DeepCopy()
	key := nodeKey(node)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.nodeKeys[node.Name]; ok && old != key {
		s.detach(old, func(e *nodeEntry) { e.node = nil })
	}
	e := s.entry(key)
	changed := e.node == nil || !equality.Semantic.DeepEqual(nodeFingerprint(e.node), nodeFingerprint(node))
	e.node = node
	s.nodeKeys[node.Name] = key
	if changed {
		s.stamp.Bump()
	}
}

// DeleteNode removes the Node with the name, if the store has it.
func (s *NodeStore) DeleteNode(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key, ok := s.nodeKeys[name]
	if !ok {
		return
	}
	delete(s.nodeKeys, name)
	s.detach(key, func(e *nodeEntry) { e.node = nil })
	s.stamp.Bump()
}

// UpdateNodeClaim adds or replaces a NodeClaim. The store keeps its own copy.
func (s *NodeStore) UpdateNodeClaim(claim *v1.NodeClaim) {
	claim = claim.DeepCopy()
	s.mu.Lock()
	defer s.mu.Unlock()
	if claim.Status.ProviderID != "" {
		delete(s.launched, claim.Name) // the status has caught up
	}
	s.putClaim(claim)
}

// Launched records the provider ID a NodeClaim's launch returned, so that the claim joins its Node at once,
// before the claim's status shows the ID (see NodeStore). A later update of the claim without a provider ID
// (a copy older than the launch) keeps the join; one with a provider ID, or the claim's deletion, ends it.
func (s *NodeStore) Launched(nodeClaim, providerID string) {
	if providerID == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.launched[nodeClaim] = providerID
	key, ok := s.claimKeys[nodeClaim]
	if !ok || key == providerID {
		return
	}
	if claim := s.entries[key].claim; claim.Status.ProviderID == "" {
		s.putClaim(claim)
	}
}

// putClaim files the claim under its key, moving it from the one it had. Callers hold the write lock.
func (s *NodeStore) putClaim(claim *v1.NodeClaim) {
	key := s.claimKeyLocked(claim)
	if old, ok := s.claimKeys[claim.Name]; ok && old != key {
		s.detach(old, func(e *nodeEntry) { e.claim = nil })
	}
	e := s.entry(key)
	changed := e.claim == nil || !equality.Semantic.DeepEqual(claimFingerprint(e.claim), claimFingerprint(claim))
	e.claim = claim
	s.claimKeys[claim.Name] = key
	if changed {
		s.stamp.Bump()
	}
}

// DeleteNodeClaim removes the NodeClaim with the name, if the store has it.
func (s *NodeStore) DeleteNodeClaim(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.launched, name)
	key, ok := s.claimKeys[name]
	if !ok {
		return
	}
	delete(s.claimKeys, name)
	s.detach(key, func(e *nodeEntry) { e.claim = nil })
	s.stamp.Bump()
}

// HasNode reports whether the store has a Node with the name.
func (s *NodeStore) HasNode(name string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.nodeKeys[name]
	return ok
}

// HasNodeClaim reports whether the store has a NodeClaim with the name.
func (s *NodeStore) HasNodeClaim(name string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.claimKeys[name]
	return ok
}

// hasNodeAt reports whether the store has the Node under the key.
func (s *NodeStore) hasNodeAt(name, key string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.nodeKeys[name] == key
}

// hasNodeClaimAs reports whether the store has the NodeClaim where this copy of it belongs.
func (s *NodeStore) hasNodeClaimAs(claim *v1.NodeClaim) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.claimKeys[claim.Name] == s.claimKeyLocked(claim)
}

// NodeCount returns how many Nodes the store has.
func (s *NodeStore) NodeCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.nodeKeys)
}

// NodePoolUsage returns the capacity of the pool's nodes and in-flight NodeClaims, with their count under
// "nodes". See Snapshot.NodePoolUsage.
func (s *NodeStore) NodePoolUsage(nodePool string) corev1.ResourceList {
	s.mu.RLock()
	defer s.mu.RUnlock()
	usage := corev1.ResourceList{}
	for _, e := range s.entries {
		if e.nodePool() == nodePool {
			addUsage(usage, e)
		}
	}
	return usage
}

// nodePoolResources returns what the pool's status.resources report: the summed capacity of its launched
// machines (a Node, or a NodeClaim with a provider ID) that are not marked for deletion, with their count
// under "nodes". See Cluster.NodePoolResources.
func (s *NodeStore) nodePoolResources(nodePool string, marks map[string]struct{}) corev1.ResourceList {
	s.mu.RLock()
	defer s.mu.RUnlock()
	usage := corev1.ResourceList{v1.ResourceNodes: *resource.NewQuantity(0, resource.DecimalSI)}
	for key, e := range s.entries {
		launched := e.node != nil || (e.claim != nil && e.claim.Status.ProviderID != "")
		if e.nodePool() == nodePool && launched && !markedForDeletion(key, e, marks) {
			addUsage(usage, e)
		}
	}
	return usage
}

// nodeView is a consistent, deep-copied read of the store for Snapshot.
type nodeView struct {
	nodes    []*nodeEntry // have a Node, sorted by key
	keys     []string
	inFlight []*nodeEntry // NodeClaim only, sorted by key
	flyKeys  []string
	usage    map[string]corev1.ResourceList
}

// view deep-copies the store.
func (s *NodeStore) view() nodeView {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v := nodeView{usage: map[string]corev1.ResourceList{}}
	keys := make([]string, 0, len(s.entries))
	for k := range s.entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		e := s.entries[k]
		c := &nodeEntry{node: e.node.DeepCopy(), claim: e.claim.DeepCopy()}
		if e.node != nil {
			v.nodes, v.keys = append(v.nodes, c), append(v.keys, k)
		} else {
			v.inFlight, v.flyKeys = append(v.inFlight, c), append(v.flyKeys, k)
		}
		if pool := e.nodePool(); pool != "" {
			if v.usage[pool] == nil {
				v.usage[pool] = corev1.ResourceList{}
			}
			addUsage(v.usage[pool], e)
		}
	}
	return v
}

// entry returns the entry under key, creating it. Callers hold the write lock.
func (s *NodeStore) entry(key string) *nodeEntry {
	e, ok := s.entries[key]
	if !ok {
		e = &nodeEntry{}
		s.entries[key] = e
	}
	return e
}

// detach clears one side of the entry under key and drops the entry once both sides are gone. Callers hold
// the write lock.
func (s *NodeStore) detach(key string, clear func(*nodeEntry)) {
	e, ok := s.entries[key]
	if !ok {
		return
	}
	clear(e)
	if e.node == nil && e.claim == nil {
		delete(s.entries, key)
	}
}

// nodePool is the pool the machine belongs to: the NodeClaim's label, else the Node's.
func (e *nodeEntry) nodePool() string {
	if e.claim != nil {
		if p := e.claim.Labels[v1.NodePoolLabelKey]; p != "" {
			return p
		}
	}
	if e.node != nil {
		return e.node.Labels[v1.NodePoolLabelKey]
	}
	return ""
}

// capacity is what the machine holds: the launched NodeClaim's capacity, else the Node's, else (not launched
// yet) what the NodeClaim asked for.
func (e *nodeEntry) capacity() corev1.ResourceList {
	switch {
	case e.claim != nil && len(e.claim.Status.Capacity) > 0:
		return e.claim.Status.Capacity
	case e.node != nil && len(e.node.Status.Capacity) > 0:
		return e.node.Status.Capacity
	case e.claim != nil:
		return e.claim.Spec.Resources.Requests
	}
	return nil
}

// allocatable is what pods may use: the Node's allocatable once reported, else the NodeClaim's estimate.
func (e *nodeEntry) allocatable() corev1.ResourceList {
	if e.node != nil && len(e.node.Status.Allocatable) > 0 {
		return e.node.Status.Allocatable
	}
	if e.claim != nil {
		return e.claim.Status.Allocatable
	}
	return nil
}

// addUsage adds the machine's capacity and one node to usage.
func addUsage(usage corev1.ResourceList, e *nodeEntry) {
	for name, q := range e.capacity() {
		if name == v1.ResourceNodes {
			continue
		}
		sum := usage[name]
		sum.Add(q)
		usage[name] = sum
	}
	n := usage[v1.ResourceNodes]
	n.Add(*resource.NewQuantity(1, resource.DecimalSI))
	usage[v1.ResourceNodes] = n
}

func nodeKey(n *corev1.Node) string {
	if n.Spec.ProviderID != "" {
		return n.Spec.ProviderID
	}
	return unidentifiedNodeKeyPrefix + n.Name
}

// claimKeyLocked is the claim's provider ID: its status's, else its launch's (Launched), else a key derived
// from its name. Callers hold the lock.
func (s *NodeStore) claimKeyLocked(c *v1.NodeClaim) string {
	if c.Status.ProviderID != "" {
		return c.Status.ProviderID
	}
	if id := s.launched[c.Name]; id != "" {
		return id
	}
	return unlaunchedClaimKeyPrefix + c.Name
}

// nodeFingerprint is the part of a Node that scheduling depends on; heartbeats and other status churn are
// left out so they don't bump the stamp.
func nodeFingerprint(n *corev1.Node) any {
	return struct {
		Labels      map[string]string
		Annotations map[string]string
		Deleting    bool
		Spec        corev1.NodeSpec
		Capacity    corev1.ResourceList
		Allocatable corev1.ResourceList
		Ready       corev1.ConditionStatus
	}{n.Labels, n.Annotations, n.DeletionTimestamp != nil, n.Spec, n.Status.Capacity, n.Status.Allocatable, scheduling.NodeReadyStatus(n)}
}

// claimFingerprint is the part of a NodeClaim that scheduling and disruption depend on.
func claimFingerprint(c *v1.NodeClaim) any {
	conditions := map[string]string{}
	for _, cond := range c.Status.Conditions {
		conditions[cond.Type] = string(cond.Status) + "/" + cond.Reason
	}
	return struct {
		Labels      map[string]string
		Annotations map[string]string
		Deleting    bool
		Spec        v1.NodeClaimSpec
		NodeName    string
		ProviderID  string
		Capacity    corev1.ResourceList
		Allocatable corev1.ResourceList
		Conditions  map[string]string
	}{c.Labels, c.Annotations, c.DeletionTimestamp != nil, c.Spec, c.Status.NodeName, c.Status.ProviderID,
		c.Status.Capacity, c.Status.Allocatable, conditions}
}

// ref reads, under the lock and copying nothing, what liveness needs of the machine the target names.
func (s *NodeStore) ref(t Target, marks map[string]struct{}) machineRef {
	s.mu.RLock()
	defer s.mu.RUnlock()
	key, ok := s.claimKeys[t.NodeClaim]
	if t.NodeClaim == "" {
		key, ok = s.nodeKeys[t.Node]
	}
	if !ok {
		return machineRef{}
	}
	return refOf(key, s.entries[key], marks)
}
