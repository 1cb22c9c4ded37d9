package simulate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"go.yaml.in/yaml/v2"
)

// yamlDocumentsToJSON converts consecutive YAML documents to JSON with one YAML parser, as sigs.k8s.io/yaml's
// YAMLToJSON converts each alone: the same parser, the same key and value conversions. A parser per document
// (what YAMLToJSON does) allocates tens of kilobytes of token queue for each one, most of the cost of reading
// thousands of small Pod documents. kinds are the documents' top-level kind, "" when it isn't a string. ok is
// false when the documents can't be converted together (a syntax
// error, or document markers inside a document): convert them one by one then, which reports the document
// at fault.
func yamlDocumentsToJSON(docs [][]byte) (out [][]byte, kinds []string, ok bool) {
	var stream bytes.Buffer
	for _, d := range docs {
		if !startsDocument(d) {
			stream.WriteString("---\n")
		}
		stream.Write(d)
		if len(d) > 0 && d[len(d)-1] != '\n' {
			stream.WriteByte('\n')
		}
	}
	dec := yaml.NewDecoder(&stream)
	for {
		var obj any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || len(out) == len(docs) {
			return nil, nil, false
		}
		jsonable, err := toJSONable(obj)
		if err != nil {
			return nil, nil, false
		}
		data, err := json.Marshal(jsonable)
		if err != nil {
			return nil, nil, false
		}
		m, _ := jsonable.(map[string]any)
		kind, _ := m["kind"].(string)
		out, kinds = append(out, data), append(kinds, kind)
	}
	return out, kinds, len(out) == len(docs)
}

// startsDocument reports whether d opens with a document start marker (the first document of a file
// often does).
func startsDocument(d []byte) bool {
	return bytes.HasPrefix(d, []byte("---")) && (len(d) == 3 || bytes.IndexByte([]byte(" \t\r\n"), d[3]) >= 0)
}

// toJSONable turns YAML mappings (keys of any scalar type) into JSON objects, keys written as YAMLToJSON
// writes them, recursively; other values are left to encoding/json.
func toJSONable(obj any) (any, error) {
	switch obj := obj.(type) {
	case map[any]any:
		out := make(map[string]any, len(obj))
		for k, v := range obj {
			key, err := jsonKey(k)
			if err != nil {
				return nil, err
			}
			if out[key], err = toJSONable(v); err != nil {
				return nil, err
			}
		}
		return out, nil
	case []any:
		out := make([]any, len(obj))
		for i, v := range obj {
			var err error
			if out[i], err = toJSONable(v); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return obj, nil
}

func jsonKey(k any) (string, error) {
	switch k := k.(type) {
	case string:
		return k, nil
	case int:
		return strconv.Itoa(k), nil
	case int64:
		return strconv.FormatInt(k, 10), nil
	case float64:
		switch s := strconv.FormatFloat(k, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", nil
		case "-Inf":
			return "-.inf", nil
		case "NaN":
			return ".nan", nil
		default:
			return s, nil
		}
	case bool:
		return strconv.FormatBool(k), nil
	}
	return "", fmt.Errorf("unsupported map key of type %T", k)
}
