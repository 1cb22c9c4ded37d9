package simulate

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// blockYAMLToJSON converts one YAML document to the JSON sigs.k8s.io/yaml's YAMLToJSON gives for it, byte
// for byte (keys sorted, as encoding/json writes maps), without a YAML parser: it reads only the plain block
// style manifests are written in (kubectl and yaml.Marshal output, most hand-written files) and declines
// everything else with ok false, for the full parser to handle. It also returns the document's top-level
// kind ("" when there is none).
//
// What it reads: a top-level mapping; nested block mappings and sequences, sequences at their key's
// indentation or deeper; `- key: value` items; comment lines; a leading `---`; scalars on one line: plain
// strings starting with a letter, quantities (8Gi, 100m), flags (--v=2), YAML 1.1 booleans and nulls, decimal integers, single- and double-quoted
// strings without escapes, `{}` and `[]`. It declines tabs, carriage returns, non-ASCII bytes, `#` other
// than on a comment line, anchors, aliases, tags, block scalars, multi-line scalars, flow collections with
// content, complex, duplicate and long keys, keys that YAML 1.1 reads as non-strings, floats, and integers that
// are not plainly decimal. Declining is always safe; TestBlockYAMLToJSON and FuzzBlockYAMLToJSON hold the
// accepted subset to YAMLToJSON's output.
func blockYAMLToJSON(doc []byte) (out []byte, kind string, ok bool) {
	p := blockParser{}
	if !p.split(doc) || len(p.lines) == 0 || p.lines[0].indent != 0 || isSeqItem(p.lines[0].text) {
		return nil, "", false
	}
	p.out = make([]byte, 0, len(doc))
	if !p.mapping(0, true) || p.i != len(p.lines) {
		return nil, "", false
	}
	return p.out, p.kind, true
}

// blockLine is one line with content: its indentation and its text without indentation and trailing spaces.
type blockLine struct {
	indent int
	text   []byte
}

type blockParser struct {
	lines []blockLine
	i     int
	out   []byte
	kind  string
}

// split cuts doc into lines with content, dropping blank and comment lines and a leading `---`. It declines
// bytes the subset leaves out.
func (p *blockParser) split(doc []byte) bool {
	p.lines = make([]blockLine, 0, bytes.Count(doc, []byte{'\n'})+1)
	first := true
	for len(doc) > 0 {
		line := doc
		if n := bytes.IndexByte(doc, '\n'); n >= 0 {
			line, doc = doc[:n], doc[n+1:]
		} else {
			doc = nil
		}
		indent := 0
		for indent < len(line) && line[indent] == ' ' {
			indent++
		}
		text := bytes.TrimRight(line[indent:], " ")
		if len(text) == 0 {
			continue
		}
		for _, c := range text {
			if c < 0x20 || c > 0x7e {
				return false
			}
		}
		switch {
		case text[0] == '#':
			continue
		case first && indent == 0 && string(text) == "---":
			first = false
			continue
		case bytes.IndexByte(text, '#') >= 0, text[0] == '%', bytes.HasPrefix(text, []byte("---")), bytes.HasPrefix(text, []byte("...")):
			return false
		}
		first = false
		p.lines = append(p.lines, blockLine{indent: indent, text: text})
	}
	return true
}

func isSeqItem(text []byte) bool {
	return text[0] == '-' && (len(text) == 1 || text[1] == ' ')
}

// entry is a mapping entry written to out[start:end], as `"key":value`.
type entry struct {
	key        string
	start, end int
}

// mapping reads the block mapping whose keys are at indent, from the current line.
func (p *blockParser) mapping(indent int, top bool) bool {
	var entries []entry
	p.out = append(p.out, '{')
	for p.i < len(p.lines) && p.lines[p.i].indent == indent {
		line := p.lines[p.i]
		if isSeqItem(line.text) {
			return false
		}
		key, rest, ok := blockKey(line.text)
		if !ok {
			return false
		}
		if len(entries) > 0 {
			p.out = append(p.out, ',')
		}
		start := len(p.out)
		p.out = appendJSONString(p.out, key)
		p.out = append(p.out, ':')
		p.i++
		switch {
		case len(rest) > 0:
			str, ok := p.scalar(rest)
			if !ok || !p.endsScalar(indent) {
				return false
			}
			if top && key == "kind" {
				p.kind = str
			}
		case p.i < len(p.lines) && p.lines[p.i].indent > indent:
			if !p.block(p.lines[p.i].indent) {
				return false
			}
		case p.i < len(p.lines) && p.lines[p.i].indent == indent && isSeqItem(p.lines[p.i].text):
			if !p.sequence(indent) {
				return false
			}
		default:
			p.out = append(p.out, "null"...)
		}
		entries = append(entries, entry{key: key, start: start, end: len(p.out)})
	}
	if p.i < len(p.lines) && p.lines[p.i].indent > indent {
		return false
	}
	if !p.sortEntries(entries) {
		return false
	}
	p.out = append(p.out, '}')
	return true
}

// sortEntries puts the entries written so far in key order, as encoding/json writes a map. Duplicate keys
// decline.
func (p *blockParser) sortEntries(entries []entry) bool {
	if slices.IsSortedFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) }) {
		for i := 1; i < len(entries); i++ {
			if entries[i].key == entries[i-1].key {
				return false
			}
		}
		return true
	}
	from := entries[0].start
	written := slices.Clone(p.out[from:])
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	p.out = p.out[:from]
	for i, e := range entries {
		if i > 0 {
			if e.key == entries[i-1].key {
				return false
			}
			p.out = append(p.out, ',')
		}
		p.out = append(p.out, written[e.start-from:e.end-from]...)
	}
	return true
}

// block reads the mapping or sequence starting at the current line, indented by indent.
func (p *blockParser) block(indent int) bool {
	if isSeqItem(p.lines[p.i].text) {
		return p.sequence(indent)
	}
	return p.mapping(indent, false)
}

// sequence reads the block sequence whose dashes are at indent.
func (p *blockParser) sequence(indent int) bool {
	p.out = append(p.out, '[')
	for n := 0; p.i < len(p.lines) && p.lines[p.i].indent == indent && isSeqItem(p.lines[p.i].text); n++ {
		if n > 0 {
			p.out = append(p.out, ',')
		}
		text := p.lines[p.i].text
		rest := bytes.TrimLeft(text[1:], " ")
		if len(rest) == 0 || isSeqItem(rest) {
			return false
		}
		if _, _, isKey := blockKey(rest); isKey {
			// `- key: value`: a mapping whose keys line up with this first one.
			p.lines[p.i] = blockLine{indent: indent + len(text) - len(rest), text: rest}
			if !p.mapping(p.lines[p.i].indent, false) {
				return false
			}
			continue
		}
		p.i++
		if _, ok := p.scalar(rest); !ok || !p.endsScalar(indent) {
			return false
		}
	}
	if p.i < len(p.lines) && p.lines[p.i].indent > indent {
		return false
	}
	p.out = append(p.out, ']')
	return true
}

// endsScalar reports whether a scalar written on a line of the block at indent ends there: a deeper next
// line would continue it (a multi-line scalar) or be an error.
func (p *blockParser) endsScalar(indent int) bool {
	return p.i == len(p.lines) || p.lines[p.i].indent <= indent
}

// blockKey splits `key: rest` or `key:`; ok is false for anything else, and for keys YAML 1.1 doesn't read
// as plain strings.
func blockKey(text []byte) (key string, rest []byte, ok bool) {
	var end int
	switch text[0] {
	case '"', '\'':
		n := bytes.IndexByte(text[1:], text[0])
		if n < 0 || (text[0] == '"' && bytes.IndexByte(text[1:n+1], '\\') >= 0) {
			return "", nil, false
		}
		key, end = string(text[1:n+1]), n+2
		if end >= len(text) || text[end] != ':' {
			return "", nil, false
		}
	default:
		end = bytes.IndexByte(text, ':')
		if end <= 0 || !plainKey(text[:end]) {
			return "", nil, false
		}
		key = string(text[:end])
	}
	// YAML limits an implicit key to 1024 characters.
	if end > 1000 || end+1 < len(text) && text[end+1] != ' ' {
		return "", nil, false
	}
	return key, bytes.TrimLeft(text[end+1:], " "), true
}

// plainKey reports whether an unquoted key is a plain string to YAML 1.1: starting with a letter, made of
// the characters of label keys, not a boolean or null.
func plainKey(k []byte) bool {
	if !isLetter(k[0]) {
		return false
	}
	for _, c := range k {
		if !isLetter(c) && !isDigit(c) && c != '.' && c != '/' && c != '-' && c != '_' {
			return false
		}
	}
	_, special := yaml11Words[string(k)]
	return !special
}

// yaml11Words are the plain scalars starting with a letter (or ~) that YAML 1.1, as yaml.v2 reads it, takes
// for booleans and nulls, with their JSON.
var yaml11Words = map[string]string{
	"y": "true", "Y": "true", "yes": "true", "Yes": "true", "YES": "true",
	"true": "true", "True": "true", "TRUE": "true", "on": "true", "On": "true", "ON": "true",
	"n": "false", "N": "false", "no": "false", "No": "false", "NO": "false",
	"false": "false", "False": "false", "FALSE": "false", "off": "false", "Off": "false", "OFF": "false",
	"null": "null", "Null": "null", "NULL": "null", "~": "null",
}

// scalar writes the JSON of a one-line scalar and returns it when it is a string.
func (p *blockParser) scalar(text []byte) (string, bool) {
	switch c := text[0]; {
	case c == '"' || c == '\'':
		n := bytes.IndexByte(text[1:], c)
		if len(text) < 2 || n != len(text)-2 || (c == '"' && bytes.IndexByte(text, '\\') >= 0) {
			return "", false
		}
		s := string(text[1 : n+1])
		p.out = appendJSONString(p.out, s)
		return s, true
	case string(text) == "{}" || string(text) == "[]":
		p.out = append(p.out, text...)
		return "", true
	case isDigit(c) || c == '-':
		if decimalInt(text) {
			p.out = append(p.out, text...)
			return "", true
		}
		if !(isDigit(c) && digitString(text)) && !(c == '-' && flagString(text)) {
			return "", false
		}
		s := string(text)
		p.out = appendJSONString(p.out, s)
		return s, true
	case isLetter(c) || c == '~':
		if word, ok := yaml11Words[string(text)]; ok {
			p.out = append(p.out, word...)
			return "", true
		}
		if c == '~' || !plainString(text) {
			return "", false
		}
		s := string(text)
		p.out = appendJSONString(p.out, s)
		return s, true
	}
	return "", false
}

// plainString reports whether a plain scalar starting with a letter is read as written: no mapping
// indicator, no flow indicators (what they mean depends on the context).
func plainString(text []byte) bool {
	for i, c := range text {
		switch c {
		case '[', ']', '{', '}':
			return false
		case ':':
			if i+1 == len(text) || text[i+1] == ' ' {
				return false
			}
		}
	}
	return true
}

// decimalInt reports whether text is an integer yaml.v2 reads as the same decimal number: no sign but a
// minus on a non-zero number, no leading zero, at most 18 digits.
func decimalInt(text []byte) bool {
	digits := text
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || digits[0] == '0' && (len(digits) > 1 || len(text) > 1) {
		return false
	}
	for _, c := range digits {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// digitString reports whether a plain scalar starting with a digit is a string to yaml.v2 (quantities such
// as 8Gi or 100m): digits, letters and dots only (no timestamp), with a letter that no integer or float
// has (hex digits, base prefixes and exponents do).
func digitString(text []byte) bool {
	other := false
	for _, c := range text {
		switch {
		case isDigit(c) || c == '.':
		case strings.IndexByte("abcdefABCDEFxXoObB", c) >= 0:
		case isLetter(c):
			other = true
		default:
			return false
		}
	}
	return other
}

// flagString reports whether a plain scalar starting with a minus is a string to yaml.v2: a minus or two,
// then a letter (command-line flags), where every number has a digit or a dot.
func flagString(text []byte) bool {
	rest := bytes.TrimPrefix(text[1:], []byte{'-'})
	return len(rest) > 0 && isLetter(rest[0]) && plainString(text)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// appendJSONString writes s as encoding/json does: plain printable ASCII as is, anything else escaped by
// encoding/json itself.
func appendJSONString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(s)
			return append(out, quoted...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}
