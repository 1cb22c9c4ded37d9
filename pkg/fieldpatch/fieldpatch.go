// Package fieldpatch writes an object's changed fields as a JSON patch (RFC 6902) in which each change is
// guarded by a test of the value it replaces, instead of a merge patch under an optimistic lock on the whole
// object.
//
// A merge patch replaces a list whole (taints, finalizers, owner references, status conditions), so a
// writer that changes a list must lock against other writers; with the resource version as the lock, any
// write to the object in between makes the patch fail, however unrelated (a kubelet heartbeat, a label of
// the node lifecycle controller, a status timestamp of another controller). Under load the writer's cached
// copy is seconds old, and every such failure costs a read from the API server and a second write. Here the
// lock is narrowed to the values the write replaces: the patch fails only when one of them changed since the
// copy it was computed from, and the API server applies it to its newest version otherwise.
//
// A failed test comes back from the API server as 422 Unprocessable Entity; AsConflict turns it into a 409
// Conflict, so callers handle a lost race as they do for an optimistic lock; Patch and PatchStatus write a
// patch and convert its answer in one call.
package fieldpatch

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Field is a path in the object that a patch may change, and how its change is guarded.
type Field struct {
	path []string
	mode mode
}

type mode int

const (
	// keys: a map whose entries are set and removed one by one, each guarded by its own old value.
	keys mode = iota
	// whole: a value (a list, usually) replaced whole, guarded by its whole old value.
	whole
	// unguarded: a value replaced without a test, for fields the writer alone owns.
	unguarded
	// read: a value the change was computed from and does not change, tested whenever the patch writes.
	read
)

// Keys is a map (labels, annotations) whose changed entries are written one by one, each guarded by its old
// value: entries others change concurrently are kept, and an entry changed by both fails the patch.
func Keys(path ...string) Field { return Field{path: path, mode: keys} }

// Whole is a value replaced whole, guarded by its whole old value (taints, finalizers, conditions).
func Whole(path ...string) Field { return Field{path: path, mode: whole} }

// Unguarded is a value replaced whole without a test: only for fields no other writer sets.
func Unguarded(path ...string) Field { return Field{path: path, mode: unguarded} }

// Read is a value the patch does not change but was computed from (a timestamp a condition is derived
// from): the patch fails when it changed since the copy, though nothing else the patch replaces did. It is
// tested only when the patch writes something.
func Read(path ...string) Field { return Field{path: path, mode: read} }

// From returns a patch from before to the object it is applied with, covering fields. A change outside
// fields is an error, so that nothing the caller changed is silently left out.
func From(before client.Object, fields ...Field) client.Patch {
	return &patch{before: before, fields: fields}
}

type patch struct {
	before client.Object
	fields []Field
}

func (p *patch) Type() types.PatchType { return types.JSONPatchType }

// Data returns the JSON patch from p.before to after; an empty list when nothing in fields changed.
func (p *patch) Data(after client.Object) ([]byte, error) {
	ops, err := Operations(p.before, after, p.fields...)
	if err != nil {
		return nil, err
	}
	return json.Marshal(ops)
}

// Operation is one operation of a JSON patch.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// MarshalJSON writes value for test, add and replace even when it is null (a test that a value is absent).
func (o Operation) MarshalJSON() ([]byte, error) {
	if o.Op == "remove" {
		return json.Marshal(struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}{o.Op, o.Path})
	}
	return json.Marshal(struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}{o.Op, o.Path, o.Value})
}

// Operations returns the guarded operations that turn before's fields into after's.
func Operations(before, after any, fields ...Field) ([]Operation, error) {
	old, err := document(before)
	if err != nil {
		return nil, err
	}
	updated, err := document(after)
	if err != nil {
		return nil, err
	}
	b := &builder{old: old, parents: map[string]bool{}}
	for _, f := range fields {
		if f.mode == read {
			continue // tested below, once it is known that the patch writes
		}
		o, _ := lookup(old, f.path)
		n, _ := lookup(updated, f.path)
		if reflect.DeepEqual(o, n) {
			continue
		}
		if f.mode == keys {
			if om, ok := o.(map[string]any); ok {
				if nm, ok := n.(map[string]any); ok {
					b.entries(f.path, om, nm)
					continue
				}
			}
		}
		b.set(f.path, o, n, f.mode != unguarded)
	}
	if err := unlisted(old, updated, fields); err != nil {
		return nil, err
	}
	if len(b.ops) == 0 {
		return nil, nil
	}
	var reads []Operation
	for _, f := range fields {
		if f.mode == read {
			reads = append(reads, b.readTest(f.path))
		}
	}
	return append(reads, b.ops...), nil
}

// readTest tests the value at path as before has it (null when absent); when a parent of it is absent, it
// tests that the outermost absent parent still is, as a test of a path under a missing parent fails.
func (b *builder) readTest(path []string) Operation {
	for i := 1; i < len(path); i++ {
		if v, ok := lookup(b.old, path[:i]); !ok || onlyNulls(v) {
			return Operation{Op: "test", Path: pointer(path[:i]), Value: nil}
		}
	}
	v, _ := lookup(b.old, path)
	return Operation{Op: "test", Path: pointer(path), Value: v}
}

// builder accumulates operations; parents records the absent parents already added.
type builder struct {
	old     map[string]any
	ops     []Operation
	parents map[string]bool
}

// entries sets and removes the changed entries of a map one by one, each guarded by its old value.
func (b *builder) entries(path []string, old, updated map[string]any) {
	for _, k := range sortedKeys(old, updated) {
		o, had := old[k]
		n, has := updated[k]
		if had && has && reflect.DeepEqual(o, n) {
			continue
		}
		entry := append(append([]string{}, path...), k)
		b.set(entry, valueOrNil(o, had), valueOrNil(n, has), true)
	}
}

// set replaces the value at path by updated (removes it when nil), after a test of its old value when
// guarded. An absent parent is added first, guarded by a test that it is still absent.
func (b *builder) set(path []string, old, updated any, guarded bool) {
	b.addParents(path)
	p := pointer(path)
	if guarded {
		b.ops = append(b.ops, Operation{Op: "test", Path: p, Value: old})
	}
	switch {
	case updated == nil && old != nil:
		b.ops = append(b.ops, Operation{Op: "remove", Path: p})
	case updated == nil:
		// Absent before and after; nothing to write (the test above still guards it).
	default:
		// add sets a member whether or not it exists.
		b.ops = append(b.ops, Operation{Op: "add", Path: p, Value: updated})
	}
}

// addParents adds, once, every parent of path that before lacks, each as an empty object guarded by a test
// that it is absent. A parent holding only nulls counts as absent: a typed object encodes a zero timestamp as
// null in a status struct it always has, where the API server has no status at all until the first status
// write.
func (b *builder) addParents(path []string) {
	for i := 1; i < len(path); i++ {
		parent := path[:i]
		if v, ok := lookup(b.old, parent); ok && !onlyNulls(v) {
			continue
		}
		p := pointer(parent)
		if b.parents[p] {
			continue
		}
		b.parents[p] = true
		b.ops = append(b.ops, Operation{Op: "test", Path: p, Value: nil}, Operation{Op: "add", Path: p, Value: map[string]any{}})
	}
}

// unlisted fails when before and after differ outside fields. The resource version and managed fields are
// the API server's and are ignored.
func unlisted(old, updated map[string]any, fields []Field) error {
	o, n := deepCopy(old), deepCopy(updated)
	for _, d := range []map[string]any{o, n} {
		for _, f := range fields {
			if f.mode != read { // a value read may not be changed
				remove(d, f.path)
			}
		}
		remove(d, []string{"metadata", "resourceVersion"})
		remove(d, []string{"metadata", "managedFields"})
	}
	if !reflect.DeepEqual(o, n) {
		return errors.New("fieldpatch: the object changed outside the fields of the patch")
	}
	return nil
}

// ConflictRetryInterval is how soon a controller whose write lost a race (a Conflict, from a guarded patch
// or an optimistic lock) looks at the object again, without logging an error.
const ConflictRetryInterval = 100 * time.Millisecond

// Patch writes what changed in obj's fields since before as a guarded patch (From); a write that lost to a
// concurrent change of what it replaces or read is a Conflict (AsConflict).
func Patch(ctx context.Context, c client.Writer, obj, before client.Object, fields ...Field) error {
	return AsConflict(c.Patch(ctx, obj, From(before, fields...)), obj)
}

// PatchStatus is Patch through the status subresource.
func PatchStatus(ctx context.Context, c client.StatusClient, obj, before client.Object, fields ...Field) error {
	return AsConflict(c.Status().Patch(ctx, obj, From(before, fields...)), obj)
}

// AsConflict turns the API server's answer to a patch on obj that failed to apply into a Conflict; any other
// error is returned as it is. The API server answers a JSON patch it can't apply (a test that failed, or a
// path gone missing, which for a guarded patch also means a concurrent change) with 422 Unprocessable
// Entity and a fixed message without causes, and drops the reason; a validation error of the patched
// object is also a 422, but says what is invalid and lists its causes.
func AsConflict(err error, obj client.Object) error {
	var status *apierrors.StatusError
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
		return err
	}
	if s := status.Status(); s.Message != unappliedMessage || (s.Details != nil && len(s.Details.Causes) > 0) {
		return err
	}
	return apierrors.NewConflict(schema.GroupResource{}, obj.GetName(), errors.New("a value the patch replaces changed since the copy it was computed from"))
}

// unappliedMessage is the message of the API server's 422 for a JSON patch it could not apply
// (k8s.io/apiserver's patcher, through apierrors.NewGenericServerResponse).
const unappliedMessage = "the server rejected our request due to an error in our request"

// onlyNulls reports whether v is null or an object whose members are all onlyNulls.
func onlyNulls(v any) bool {
	m, isMap := v.(map[string]any)
	if v != nil && !isMap {
		return false
	}
	for _, member := range m {
		if !onlyNulls(member) {
			return false
		}
	}
	return true
}
