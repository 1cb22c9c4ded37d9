package simulate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

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

// read decodes every YAML or JSON document in r. source names r in errors.
func (o *objects) read(r io.Reader, source string) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s document %d, %w", source, doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		data, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return fmt.Errorf("parsing %s document %d, %w", source, doc, err)
		}
		if string(data) == "null" {
			continue
		}
		if err := o.add(data); err != nil {
			return fmt.Errorf("%s document %d, %w", source, doc, err)
		}
	}
}

func (o *objects) add(data []byte) error {
	var meta typeMeta
	if err := json.Unmarshal(data, &meta); err != nil {
		return fmt.Errorf("decoding, %w", err)
	}
	decode := func(into any) error {
		if err := json.Unmarshal(data, into); err != nil {
			return fmt.Errorf("decoding %s, %w", meta.Kind, err)
		}
		return nil
	}
	switch meta.Kind {
	case "List", "PodList", "NodeList", "NodePoolList", "DeploymentList":
		for _, item := range meta.Items {
			if err := o.add(item); err != nil {
				return err
			}
		}
		return nil
	case "Pod":
		var p corev1.Pod
		if err := decode(&p); err != nil {
			return err
		}
		o.pods = append(o.pods, defaultNamespace(&p))
	case "Deployment":
		var d appsv1.Deployment
		if err := decode(&d); err != nil {
			return err
		}
		o.pods = append(o.pods, expand(d.Name, d.Namespace, d.Spec.Replicas, d.Spec.Template)...)
	case "ReplicaSet":
		var rs appsv1.ReplicaSet
		if err := decode(&rs); err != nil {
			return err
		}
		o.pods = append(o.pods, expand(rs.Name, rs.Namespace, rs.Spec.Replicas, rs.Spec.Template)...)
	case "StatefulSet":
		var ss appsv1.StatefulSet
		if err := decode(&ss); err != nil {
			return err
		}
		o.pods = append(o.pods, expand(ss.Name, ss.Namespace, ss.Spec.Replicas, ss.Spec.Template)...)
	case "NodePool":
		var np v1.NodePool
		if err := decode(&np); err != nil {
			return err
		}
		o.nodePools = append(o.nodePools, &np)
	case "EC2NodeClass":
		var nc awsv1.EC2NodeClass
		if err := decode(&nc); err != nil {
			return err
		}
		o.nodeClasses = append(o.nodeClasses, &nc)
	case "Node":
		var n corev1.Node
		if err := decode(&n); err != nil {
			return err
		}
		o.nodes = append(o.nodes, &n)
	case "NodeClaim":
		var nc v1.NodeClaim
		if err := decode(&nc); err != nil {
			return err
		}
		o.nodeClaims = append(o.nodeClaims, &nc)
	case "DaemonSet":
		var ds appsv1.DaemonSet
		if err := decode(&ds); err != nil {
			return err
		}
		o.daemonSets = append(o.daemonSets, &ds)
	case "PersistentVolumeClaim":
		var c corev1.PersistentVolumeClaim
		if err := decode(&c); err != nil {
			return err
		}
		if c.Namespace == "" {
			c.Namespace = "default"
		}
		o.claims = append(o.claims, &c)
	case "PersistentVolume":
		var pv corev1.PersistentVolume
		if err := decode(&pv); err != nil {
			return err
		}
		o.volumes = append(o.volumes, &pv)
	case "StorageClass":
		var sc storagev1.StorageClass
		if err := decode(&sc); err != nil {
			return err
		}
		o.classes = append(o.classes, &sc)
	case "":
		return errors.New("document has no kind")
	default:
		if o.ignoredKinds == nil {
			o.ignoredKinds = map[string]int{}
		}
		o.ignoredKinds[meta.Kind]++
	}
	return nil
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
