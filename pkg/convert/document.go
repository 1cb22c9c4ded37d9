package convert

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Document is one YAML or JSON document of the input, and where it came from.
type Document struct {
	// Source names the input (a file name, or "-" for standard input).
	Source string
	// Index is the document's position in its source, from 1.
	Index int
	// Item is the object's position in a List document (kubectl get -o yaml writes one), from 1; 0 otherwise.
	Item int
	// JSON is the document as JSON.
	JSON []byte

	meta metav1.TypeMeta
	name string
}

// String names the document in messages: "provisioner.yaml, document 2 (Provisioner default)".
func (d *Document) String() string {
	s := fmt.Sprintf("%s, document %d", d.Source, d.Index)
	if d.Item > 0 {
		s += fmt.Sprintf(", item %d", d.Item)
	}
	if d.meta.Kind != "" {
		s += fmt.Sprintf(" (%s %s)", d.meta.Kind, d.name)
	}
	return s
}

// ReadDocuments splits a multi-document YAML (or JSON) stream into documents; empty documents are skipped.
func ReadDocuments(source string, r io.Reader) ([]*Document, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs []*Document
	for index := 1; ; index++ {
		chunk, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s, document %d, %w", source, index, err)
		}
		if len(bytes.TrimSpace(stripComments(chunk))) == 0 {
			index--
			continue
		}
		j, err := yaml.YAMLToJSON(chunk)
		if err != nil {
			return nil, fmt.Errorf("parsing %s, document %d, %w", source, index, err)
		}
		doc := &Document{Source: source, Index: index, JSON: j}
		if err := doc.readHead(); err != nil {
			return nil, fmt.Errorf("parsing %s, %w", doc, err)
		}
		if doc.meta.APIVersion != "v1" || doc.meta.Kind != "List" {
			docs = append(docs, doc)
			continue
		}
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(j, &list); err != nil {
			return nil, fmt.Errorf("parsing %s, %w", doc, err)
		}
		for i, item := range list.Items {
			d := &Document{Source: source, Index: index, Item: i + 1, JSON: item}
			if err := d.readHead(); err != nil {
				return nil, fmt.Errorf("parsing %s, %w", d, err)
			}
			docs = append(docs, d)
		}
	}
}

// readHead reads apiVersion, kind and name.
func (d *Document) readHead() error {
	var head struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(d.JSON, &head); err != nil {
		return fmt.Errorf("not a Kubernetes object, %w", err)
	}
	d.meta, d.name = head.TypeMeta, head.Metadata.Name
	return nil
}

// stripComments drops comment-only lines, so a document of only comments counts as empty.
func stripComments(b []byte) []byte {
	var out bytes.Buffer
	for _, line := range strings.Split(string(b), "\n") {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		out.WriteString(line + "\n")
	}
	return out.Bytes()
}

// decodeStrict decodes a document's JSON into out and rejects fields out does not have (and duplicate
// fields), naming each by its path.
func decodeStrict(b []byte, out any) error {
	strict, err := kjson.UnmarshalStrict(b, out)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}
