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

// objectStore holds objects of one kind by namespace/name and bumps the stamp when an update changes
// what matters about an object (changed) or when one is added or removed. It keeps its own copies.
type objectStore[P interface {
	*T
	GetNamespace() string
	GetName() string
}, T any] struct {
	stamp   *Stamp
	copy    func(P) P
	changed func(old, new P) bool

	mu   sync.RWMutex
	byNN map[types.NamespacedName]P
}

func newObjectStore[P interface {
	*T
	GetNamespace() string
	GetName() string
}, T any](stamp *Stamp, copyFn func(P) P, changed func(old, new P) bool) objectStore[P, T] {
	return objectStore[P, T]{stamp: stamp, copy: copyFn, changed: changed, byNN: map[types.NamespacedName]P{}}
}

func (s *objectStore[P, T]) update(obj P) {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	obj = s.copy(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.byNN[key]
	s.byNN[key] = obj
	if !ok || s.changed(old, obj) {
		s.stamp.Bump()
	}
}

func (s *objectStore[P, T]) delete(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byNN[key]; !ok {
		return
	}
	delete(s.byNN, key)
	s.stamp.Bump()
}

// list returns copies of the objects, sorted by namespace/name.
func (s *objectStore[P, T]) list() []P {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]P, 0, len(s.byNN))
	for _, k := range sortedKeys(s.byNN) {
		out = append(out, s.copy(s.byNN[k]))
	}
	return out
}

// DaemonSetStore holds DaemonSets by namespace/name. The simulator adds the pods of the daemonsets that
// would run on a new node to that node's overhead.
type DaemonSetStore struct {
	objects objectStore[*appsv1.DaemonSet, appsv1.DaemonSet]
}

// NewDaemonSetStore returns an empty store that bumps stamp when a daemonset's pod template changes.
func NewDaemonSetStore(stamp *Stamp) *DaemonSetStore {
	return &DaemonSetStore{objects: newObjectStore(stamp, (*appsv1.DaemonSet).DeepCopy, func(old, ds *appsv1.DaemonSet) bool {
		return !equality.Semantic.DeepEqual(old.Spec.Template, ds.Spec.Template)
	})}
}

// UpdateDaemonSet adds or replaces a DaemonSet. The store keeps its own copy.
func (s *DaemonSetStore) UpdateDaemonSet(ds *appsv1.DaemonSet) { s.objects.update(ds) }

// DeleteDaemonSet forgets the DaemonSet, if the store has it.
func (s *DaemonSetStore) DeleteDaemonSet(key types.NamespacedName) { s.objects.delete(key) }

// DaemonSets returns deep copies of the stored DaemonSets, sorted by namespace/name.
func (s *DaemonSetStore) DaemonSets() []*appsv1.DaemonSet { return s.objects.list() }

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
	objects objectStore[*policyv1.PodDisruptionBudget, policyv1.PodDisruptionBudget]
}

// NewPDBStore returns an empty store that bumps stamp when a budget's spec or allowed disruptions change.
func NewPDBStore(stamp *Stamp) *PDBStore {
	return &PDBStore{objects: newObjectStore(stamp, (*policyv1.PodDisruptionBudget).DeepCopy, func(old, pdb *policyv1.PodDisruptionBudget) bool {
		return !equality.Semantic.DeepEqual(old.Spec, pdb.Spec) || old.Status.DisruptionsAllowed != pdb.Status.DisruptionsAllowed
	})}
}

// UpdatePDB adds or replaces a PodDisruptionBudget. The store keeps its own copy.
func (s *PDBStore) UpdatePDB(pdb *policyv1.PodDisruptionBudget) { s.objects.update(pdb) }

// DeletePDB forgets the PodDisruptionBudget, if the store has it.
func (s *PDBStore) DeletePDB(key types.NamespacedName) { s.objects.delete(key) }

// PDBs returns deep copies of the stored PodDisruptionBudgets, sorted by namespace/name.
func (s *PDBStore) PDBs() []*policyv1.PodDisruptionBudget { return s.objects.list() }

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
