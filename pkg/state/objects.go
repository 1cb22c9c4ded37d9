package state

import (
	"cmp"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// DaemonSetStore holds DaemonSets by namespace/name. The simulator adds the pods of the daemonsets that
// would run on a new node to that node's overhead.
type DaemonSetStore struct {
	stamp *Stamp

	mu   sync.RWMutex
	byNN map[types.NamespacedName]*appsv1.DaemonSet
}

// NewDaemonSetStore returns an empty store that bumps stamp when a daemonset's pod template changes.
func NewDaemonSetStore(stamp *Stamp) *DaemonSetStore {
	return &DaemonSetStore{stamp: stamp, byNN: map[types.NamespacedName]*appsv1.DaemonSet{}}
}

// UpdateDaemonSet adds or replaces a DaemonSet. The store keeps its own copy.
func (s *DaemonSetStore) UpdateDaemonSet(ds *appsv1.DaemonSet) {
	key := types.NamespacedName{Namespace: ds.Namespace, Name: ds.Name}
	ds = ds.DeepCopy()
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.byNN[key]
	s.byNN[key] = ds
	if !ok || !equality.Semantic.DeepEqual(old.Spec.Template, ds.Spec.Template) {
		s.stamp.Bump()
	}
}

// DeleteDaemonSet forgets the DaemonSet, if the store has it.
func (s *DaemonSetStore) DeleteDaemonSet(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byNN[key]; !ok {
		return
	}
	delete(s.byNN, key)
	s.stamp.Bump()
}

// DaemonSets returns deep copies of the stored DaemonSets, sorted by namespace/name.
func (s *DaemonSetStore) DaemonSets() []*appsv1.DaemonSet {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*appsv1.DaemonSet, 0, len(s.byNN))
	for _, k := range sortedKeys(s.byNN) {
		out = append(out, s.byNN[k].DeepCopy())
	}
	return out
}

// DaemonSetPod returns the pod the DaemonSet would run on a new node, built from its pod template, for the
// simulator to fit next to a node's other pods.
func DaemonSetPod(ds *appsv1.DaemonSet) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(),
		Spec:       *ds.Spec.Template.Spec.DeepCopy(),
	}
}

// PDBStore holds PodDisruptionBudgets by namespace/name, for disruption to check before it evicts.
type PDBStore struct {
	stamp *Stamp

	mu   sync.RWMutex
	byNN map[types.NamespacedName]*policyv1.PodDisruptionBudget
}

// NewPDBStore returns an empty store that bumps stamp when a budget's spec or status changes.
func NewPDBStore(stamp *Stamp) *PDBStore {
	return &PDBStore{stamp: stamp, byNN: map[types.NamespacedName]*policyv1.PodDisruptionBudget{}}
}

// UpdatePDB adds or replaces a PodDisruptionBudget. The store keeps its own copy.
func (s *PDBStore) UpdatePDB(pdb *policyv1.PodDisruptionBudget) {
	key := types.NamespacedName{Namespace: pdb.Namespace, Name: pdb.Name}
	pdb = pdb.DeepCopy()
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.byNN[key]
	s.byNN[key] = pdb
	if !ok || !equality.Semantic.DeepEqual(old.Spec, pdb.Spec) ||
		old.Status.DisruptionsAllowed != pdb.Status.DisruptionsAllowed {
		s.stamp.Bump()
	}
}

// DeletePDB forgets the PodDisruptionBudget, if the store has it.
func (s *PDBStore) DeletePDB(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byNN[key]; !ok {
		return
	}
	delete(s.byNN, key)
	s.stamp.Bump()
}

// PDBs returns deep copies of the stored PodDisruptionBudgets, sorted by namespace/name.
func (s *PDBStore) PDBs() []*policyv1.PodDisruptionBudget {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*policyv1.PodDisruptionBudget, 0, len(s.byNN))
	for _, k := range sortedKeys(s.byNN) {
		out = append(out, s.byNN[k].DeepCopy())
	}
	return out
}

// DeletionMarks holds the provider IDs of nodes a disruption or termination loop has started to delete, so
// the simulator stops placing pods on them before their NodeClaim's deletion shows up in the cache.
type DeletionMarks struct {
	stamp *Stamp

	mu     sync.RWMutex
	marked map[string]struct{}
}

// NewDeletionMarks returns an empty set of marks that bumps stamp when marks change.
func NewDeletionMarks(stamp *Stamp) *DeletionMarks {
	return &DeletionMarks{stamp: stamp, marked: map[string]struct{}{}}
}

// Mark marks the nodes with the provider IDs for deletion.
func (d *DeletionMarks) Mark(providerIDs ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	changed := false
	for _, id := range providerIDs {
		if _, ok := d.marked[id]; !ok {
			d.marked[id] = struct{}{}
			changed = true
		}
	}
	if changed {
		d.stamp.Bump()
	}
}

// Unmark removes the marks, for example when a disruption command is abandoned or the node is gone.
func (d *DeletionMarks) Unmark(providerIDs ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	changed := false
	for _, id := range providerIDs {
		if _, ok := d.marked[id]; ok {
			delete(d.marked, id)
			changed = true
		}
	}
	if changed {
		d.stamp.Bump()
	}
}

// IsMarked reports whether the node with the provider ID is marked for deletion.
func (d *DeletionMarks) IsMarked(providerID string) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, ok := d.marked[providerID]
	return ok
}

// all returns a copy of the marks.
func (d *DeletionMarks) all() map[string]struct{} {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make(map[string]struct{}, len(d.marked))
	for id := range d.marked {
		out[id] = struct{}{}
	}
	return out
}

func sortedKeys[V any](m map[types.NamespacedName]V) []types.NamespacedName {
	keys := make([]types.NamespacedName, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareNN)
	return keys
}

func compareNN(a, b types.NamespacedName) int {
	if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}
