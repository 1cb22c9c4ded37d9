package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// YAML renders the objects as one multi-document YAML stream, in input order. Converted objects leave out
// what a manifest should not carry (status, empty fields); passed-through objects are written as they were read.
func (r *Result) YAML() ([]byte, error) {
	var buf bytes.Buffer
	for i, obj := range r.Objects {
		b, err := obj.YAML()
		if err != nil {
			return nil, fmt.Errorf("writing %s, %w", obj.From, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// WriteNotes writes one line per note.
func (r *Result) WriteNotes(w io.Writer) error {
	for _, n := range r.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	return nil
}

// YAML renders one object.
func (o *Object) YAML() ([]byte, error) {
	if o.Raw != nil {
		return yaml.JSONToYAML(o.Raw)
	}
	var typed any = o.EC2NodeClass
	if o.NodePool != nil {
		typed = o.NodePool
	}
	b, err := json.Marshal(typed)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if o.omitExpireAfter {
		if spec, ok := dig(m, "spec", "template", "spec"); ok {
			delete(spec, "expireAfter")
		}
	}
	prune(m)
	return yaml.Marshal(m)
}

// dig walks nested objects.
func dig(m map[string]any, keys ...string) (map[string]any, bool) {
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	return m, true
}

// prune removes nulls and empty objects (creationTimestamp: null, metadata: {}), which in these APIs always
// mean "unset". Empty lists stay: spec.template.spec.requirements is required even when empty.
func prune(m map[string]any) {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(t)
			if len(t) == 0 {
				delete(m, k)
			}
		case []any:
			for _, e := range t {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		}
	}
}
