package simulate

// indentCompact appends compact JSON (as json.Marshal writes it: no insignificant whitespace) to dst,
// laid out as json.MarshalIndent lays it out with no prefix and an indent of two spaces: one member or
// element a line, ": " after a key, and empty objects and arrays kept as {} and []. It does the work of
// the encoding/json indenter without its general scanner, which was most of the cost of writing a plan.
// src must be json.Marshal's output; anything else may be laid out differently.
func indentCompact(dst, src []byte) []byte {
	depth := 0
	newline := func() {
		dst = append(dst, '\n')
		for range depth {
			dst = append(dst, ' ', ' ')
		}
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"':
			// Copy the string through its closing quote; a backslash escapes the byte after it.
			j := i + 1
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\\' {
					j++
				}
			}
			dst = append(dst, src[i:j+1]...)
			i = j
		case '{', '[':
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, c, src[i+1])
				i++
				continue
			}
			dst = append(dst, c)
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
