package convert

import (
	"fmt"
	"strings"
)

// Problem is something in one input document that could not be converted (or, as a note, was converted with
// a change worth reading).
type Problem struct {
	Doc     *Document
	Field   string
	Message string
}

// String reads "provisioner.yaml, document 2 (Provisioner default): spec.provider.launchTemplate: message".
func (p Problem) String() string {
	var b strings.Builder
	if p.Doc != nil {
		b.WriteString(p.Doc.String() + ": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Errors is every problem of a conversion that failed; nothing of the conversion should be written.
type Errors []Problem

func (e Errors) Error() string {
	lines := make([]string, 0, len(e))
	for _, p := range e {
		lines = append(lines, p.String())
	}
	return fmt.Sprintf("cannot convert (%d problem(s)):\n  %s", len(e), strings.Join(lines, "\n  "))
}

// report collects the problems and notes of one conversion.
type report struct {
	problems Errors
	notes    []Problem
	// renames maps field path prefixes of the intermediate v1beta1 form back to the input's own fields while
	// an alpha document is converted through it (spec.template.spec.kubelet is spec.kubeletConfiguration).
	renames map[string]string
}

// fieldName renames a field path through renames.
func (r *report) fieldName(field string) string {
	best := ""
	for from := range r.renames {
		if (field == from || strings.HasPrefix(field, from+".")) && len(from) > len(best) {
			best = from
		}
	}
	if best == "" {
		return field
	}
	return r.renames[best] + strings.TrimPrefix(field, best)
}

func (r *report) fail(doc *Document, field, format string, args ...any) {
	r.problems = append(r.problems, Problem{Doc: doc, Field: r.fieldName(field), Message: fmt.Sprintf(format, args...)})
}

func (r *report) note(doc *Document, field, format string, args ...any) {
	r.notes = append(r.notes, Problem{Doc: doc, Field: r.fieldName(field), Message: fmt.Sprintf(format, args...)})
}
