package localcluster

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Substitute replaces every ${NAME} in text with vars[NAME], as envsubst does with the environment.
// NAME is a shell variable name: letters, digits and underscores, not starting with a digit. Only the
// braced form is replaced, so a lone $ (shell snippets, regular expressions) passes through unchanged.
// Unlike envsubst it fails, naming them, when placeholders have no value, rather than leave them empty.
func Substitute(text []byte, vars map[string]string) ([]byte, error) {
	var out bytes.Buffer
	var missing []string
	for {
		start := bytes.Index(text, []byte("${"))
		if start < 0 {
			out.Write(text)
			break
		}
		end := bytes.IndexByte(text[start:], '}')
		name := ""
		if end > 0 {
			name = string(text[start+2 : start+end])
		}
		if !isVariableName(name) {
			out.Write(text[:start+2])
			text = text[start+2:]
			continue
		}
		out.Write(text[:start])
		if v, ok := vars[name]; ok {
			out.WriteString(v)
		} else if !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
		text = text[start+end+1:]
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("substituting variables, no value for %s", strings.Join(missing, ", "))
	}
	return out.Bytes(), nil
}

func isVariableName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}
