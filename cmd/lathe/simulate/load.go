package simulate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// objects are the manifests read, by kind.
type objects struct {
	pods         []*corev1.Pod
	nodePools    []*v1.NodePool
	nodeClasses  []*awsv1.EC2NodeClass
	nodes        []*corev1.Node
	nodeClaims   []*v1.NodeClaim
	daemonSets   []*appsv1.DaemonSet
	claims       []*corev1.PersistentVolumeClaim
	volumes      []*corev1.PersistentVolume
	classes      []*storagev1.StorageClass
	ignoredKinds map[string]int
}

type typeMeta struct {
	Kind  string            `json:"kind"`
	Items []json.RawMessage `json:"items"`
}

// read decodes every YAML or JSON document in r. source names r in errors. Documents are split in order,
// converted and decoded in parallel (YAML decoding is most of the cost of reading thousands of pods), and
// added in order.
func (o *objects) read(r io.Reader, source string) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("reading %s, %w", source, err)
	}
	docs, ok, err := splitDocuments(data)
	if !ok {
		docs, err = readDocuments(bytes.NewReader(data))
	}
	if err != nil {
		return fmt.Errorf("reading %s document %d, %w", source, len(docs)+1, err)
	}
	decoded := make([][]any, len(docs))
	errs := make([]error, len(docs))
	workers := min(runtime.GOMAXPROCS(0), len(docs))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from, to := w*len(docs)/workers, (w+1)*len(docs)/workers
			decodeDocuments(docs[from:to], decoded[from:to], errs[from:to])
		}()
	}
	wg.Wait()
	for i := range docs {
		if errs[i] != nil {
			return fmt.Errorf("%s document %d, %w", source, i+1, errs[i])
		}
		for _, obj := range decoded[i] {
			o.add(obj)
		}
	}
	return nil
}

// readDocuments splits a stream with YAMLReader; on error, docs are the documents before the one at fault.
func readDocuments(r io.Reader) ([][]byte, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs [][]byte
	for {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		docs = append(docs, raw)
	}
}

// decodeDocuments decodes consecutive documents into decoded, and their errors into errs. Documents in plain
// block style are converted to JSON without a YAML parser (blockYAMLToJSON); the others are converted
// together when they can be, else one by one.
func decodeDocuments(docs [][]byte, decoded [][]any, errs []error) {
	data, kinds := make([][]byte, len(docs)), make([]string, len(docs))
	var rest [][]byte
	var at []int
	for i, raw := range docs {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var ok bool
		if data[i], kinds[i], ok = blockYAMLToJSON(raw); !ok {
			rest, at = append(rest, raw), append(at, i)
		}
	}
	restData, restKinds, ok := yamlDocumentsToJSON(rest)
	for j, i := range at {
		if !ok {
			decoded[i], errs[i] = decodeDocument(docs[i])
			continue
		}
		data[i], kinds[i] = restData[j], restKinds[j]
	}
	for i := range docs {
		switch {
		case data[i] == nil:
		case kinds[i] != "":
			decoded[i], errs[i] = decodeJSONOfKind(data[i], kinds[i])
		case string(data[i]) != "null":
			decoded[i], errs[i] = decodeJSON(data[i])
		}
	}
}

// decodeDocument turns one YAML or JSON document into the objects it holds (none for an empty document,
// several for a List). Kinds the simulation doesn't use come back as ignoredKind.
func decodeDocument(raw []byte) ([]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	data, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing YAML, %w", err)
	}
	if string(data) == "null" {
		return nil, nil
	}
	return decodeJSON(data)
}

// ignoredKind is a document of a kind the simulation doesn't read.
type ignoredKind string

func decodeJSON(data []byte) ([]any, error) {
	kind, err := kindOf(data)
	if err != nil {
		return nil, fmt.Errorf("decoding, %w", err)
	}
	return decodeJSONOfKind(data, kind)
}

// decodeJSONOfKind decodes a JSON object whose top-level kind is known.
func decodeJSONOfKind(data []byte, kind string) ([]any, error) {
	var obj any
	switch kind {
	case "List", "PodList", "NodeList", "NodePoolList", "DeploymentList":
		var meta typeMeta
		if err := json.Unmarshal(data, &meta); err != nil {
			return nil, fmt.Errorf("decoding, %w", err)
		}
		var out []any
		for _, item := range meta.Items {
			objs, err := decodeJSON(item)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
		return out, nil
	case "Pod":
		obj = &corev1.Pod{}
	case "Deployment":
		obj = &appsv1.Deployment{}
	case "ReplicaSet":
		obj = &appsv1.ReplicaSet{}
	case "StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "NodePool":
		obj = &v1.NodePool{}
	case "EC2NodeClass":
		obj = &awsv1.EC2NodeClass{}
	case "Node":
		obj = &corev1.Node{}
	case "NodeClaim":
		obj = &v1.NodeClaim{}
	case "DaemonSet":
		obj = &appsv1.DaemonSet{}
	case "PersistentVolumeClaim":
		obj = &corev1.PersistentVolumeClaim{}
	case "PersistentVolume":
		obj = &corev1.PersistentVolume{}
	case "StorageClass":
		obj = &storagev1.StorageClass{}
	case "":
		return nil, errors.New("document has no kind")
	default:
		return []any{ignoredKind(kind)}, nil
	}
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, fmt.Errorf("decoding %s, %w", kind, err)
	}
	return []any{obj}, nil
}

// kindOf reads the top-level kind of a JSON object without decoding the rest: converted YAML has its keys
// sorted, so kind comes right after apiVersion, and the object is decoded once, into its type.
func kindOf(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil {
		return "", err
	} else if tok != json.Delim('{') {
		return "", errors.New("document is not an object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		if tok == "kind" {
			var kind string
			if err := dec.Decode(&kind); err != nil {
				return "", err
			}
			return kind, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", err
		}
	}
	return "", nil
}

// add files a decoded object under its kind; workloads become their replicas.
func (o *objects) add(obj any) {
	switch obj := obj.(type) {
	case *corev1.Pod:
		o.pods = append(o.pods, defaultNamespace(obj))
	case *appsv1.Deployment:
		o.pods = append(o.pods, expand(obj.Name, obj.Namespace, obj.Spec.Replicas, obj.Spec.Template)...)
	case *appsv1.ReplicaSet:
		o.pods = append(o.pods, expand(obj.Name, obj.Namespace, obj.Spec.Replicas, obj.Spec.Template)...)
	case *appsv1.StatefulSet:
		o.pods = append(o.pods, expand(obj.Name, obj.Namespace, obj.Spec.Replicas, obj.Spec.Template)...)
	case *v1.NodePool:
		o.nodePools = append(o.nodePools, obj)
	case *awsv1.EC2NodeClass:
		o.nodeClasses = append(o.nodeClasses, obj)
	case *corev1.Node:
		o.nodes = append(o.nodes, obj)
	case *v1.NodeClaim:
		o.nodeClaims = append(o.nodeClaims, obj)
	case *appsv1.DaemonSet:
		o.daemonSets = append(o.daemonSets, obj)
	case *corev1.PersistentVolumeClaim:
		if obj.Namespace == "" {
			obj.Namespace = "default"
		}
		o.claims = append(o.claims, obj)
	case *corev1.PersistentVolume:
		o.volumes = append(o.volumes, obj)
	case *storagev1.StorageClass:
		o.classes = append(o.classes, obj)
	case ignoredKind:
		if o.ignoredKinds == nil {
			o.ignoredKinds = map[string]int{}
		}
		o.ignoredKinds[string(obj)]++
	}
}

func defaultNamespace(p *corev1.Pod) *corev1.Pod {
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	return p
}

// expand turns a workload's template into its replicas (default 1), named <name>-<i>.
func expand(name, namespace string, replicas *int32, template corev1.PodTemplateSpec) []*corev1.Pod {
	n := int32(1)
	if replicas != nil {
		n = *replicas
	}
	if namespace == "" {
		namespace = "default"
	}
	out := make([]*corev1.Pod, 0, n)
	for i := range n {
		p := &corev1.Pod{ObjectMeta: *template.ObjectMeta.DeepCopy(), Spec: *template.Spec.DeepCopy()}
		p.Name = fmt.Sprintf("%s-%d", strings.TrimSuffix(name, "-"), i)
		p.Namespace = namespace
		out = append(out, p)
	}
	return out
}
