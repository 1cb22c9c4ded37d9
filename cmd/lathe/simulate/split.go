package simulate

import (
	"bytes"
	"fmt"
)

// splitDocuments cuts a YAML stream into documents exactly as apimachinery's YAMLReader does (TestSplitDocuments
// and FuzzSplitDocuments compare them with it), without copying a line: a line starting with `---` ends the document
// before it and is dropped, or starts the document when none is open; anything but spaces and a comment after
// the `---` is an error. YAMLReader reads line by line through a buffer, a tenth of reading 1,000 Pods. ok is
// false for a stream with a carriage return (YAMLReader rewrites line ends): split it with YAMLReader.
// On error, docs are the documents before the one at fault.
func splitDocuments(data []byte) (docs [][]byte, ok bool, err error) {
	if bytes.IndexByte(data, '\r') >= 0 {
		return nil, false, nil
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		// YAMLReader ends every line, the last one too.
		data = append(data[:len(data):len(data)], '\n')
	}
	start := 0
	for pos := 0; pos < len(data); {
		end := pos + bytes.IndexByte(data[pos:], '\n') + 1
		if line := data[pos:end]; bytes.HasPrefix(line, []byte("---")) {
			if rest := bytes.TrimSpace(line[3:]); len(rest) > 0 && rest[0] != '#' {
				return docs, true, fmt.Errorf("invalid Yaml document separator: %s", rest)
			}
			if pos > start {
				docs = append(docs, data[start:pos])
				start = end
			}
		}
		pos = end
	}
	if start < len(data) {
		docs = append(docs, data[start:])
	}
	return docs, true, nil
}
