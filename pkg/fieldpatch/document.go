package fieldpatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// document returns v as a JSON document; numbers stay exact (json.Number).
func document(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("fieldpatch: encoding the object, %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("fieldpatch: decoding the object, %w", err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	return doc, nil
}

// lookup returns the value at path and whether it is present.
func lookup(doc map[string]any, path []string) (any, bool) {
	var cur any = doc
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// remove deletes the value at path, if present.
func remove(doc map[string]any, path []string) {
	parent, ok := lookup(doc, path[:len(path)-1])
	if m, isMap := parent.(map[string]any); ok && isMap {
		delete(m, path[len(path)-1])
	}
}

// deepCopy copies a JSON document.
func deepCopy(doc map[string]any) map[string]any {
	out := make(map[string]any, len(doc))
	for k, v := range doc {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return deepCopy(t)
	case []any:
		out := make([]any, len(t))
		for i := range t {
			out[i] = copyValue(t[i])
		}
		return out
	}
	return v
}

// pointer encodes path as a JSON pointer (RFC 6901): "~" becomes "~0" and "/" becomes "~1".
func pointer(path []string) string {
	var b strings.Builder
	for _, k := range path {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(k))
	}
	return b.String()
}

// sortedKeys returns the keys of both maps, sorted, so that a patch is the same for the same change.
func sortedKeys(a, b map[string]any) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// valueOrNil returns v when present and nil otherwise.
func valueOrNil(v any, present bool) any {
	if !present {
		return nil
	}
	return v
}
