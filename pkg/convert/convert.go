package convert

import (
	"errors"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// The API groups of Karpenter's core and AWS objects.
const (
	groupCore = v1.Group
	groupAWS  = awsv1.Group
)

// Options change how documents are converted.
type Options struct {
	// IgnoreDefaults leaves out the requirements Karpenter's v1alpha5 webhook added to Provisioners that did
	// not constrain the OS, architecture, capacity type or instance types (upstream's --ignore-defaults).
	IgnoreDefaults bool
}

// Object is one converted (or passed through) object, in output order.
type Object struct {
	// From is the input document the object came from.
	From *Document
	// NodePool or EC2NodeClass is set for a converted object; Raw for a v1 object passed through as it was.
	NodePool     *v1.NodePool
	EC2NodeClass *awsv1.EC2NodeClass
	Raw          []byte

	// omitExpireAfter leaves spec.template.spec.expireAfter out of the output (the source did not set it;
	// v1's default, 720h, is v1beta1's).
	omitExpireAfter bool
}

// Result is a successful conversion.
type Result struct {
	Objects []*Object
	// Notes are changes the conversion made that are worth reading (placeholders, dropped fields, documents
	// left out).
	Notes []Problem
}

// ErrNothingToConvert is returned when the input holds no Karpenter object.
var ErrNothingToConvert = errors.New("no Karpenter objects to convert (expected Provisioner, AWSNodeTemplate, NodePool or EC2NodeClass)")

// converter holds one conversion's state: outputs so far and what is pending for the kubelet move.
type converter struct {
	report
	opts    Options
	objects []*Object
	pools   []*pendingPool
	classes map[string]*Object
	// v1Classes are the EC2NodeClasses passed through because they are v1 already.
	v1Classes map[string]bool
}

// pendingPool is a converted NodePool whose v1beta1-style kubelet block has yet to move to its EC2NodeClass.
type pendingPool struct {
	doc     *Document
	field   string
	pool    *v1.NodePool
	kubelet *awsv1.KubeletConfiguration
}

// Convert converts every document. It returns Errors listing every problem when any document cannot be
// converted; then none of the output should be used.
func Convert(docs []*Document, opts Options) (*Result, error) {
	c := &converter{opts: opts, classes: map[string]*Object{}, v1Classes: map[string]bool{}}
	for _, doc := range docs {
		c.document(doc)
	}
	c.moveKubelets()
	// The kubelet move reports last; put every problem and note with its document.
	order := make(map[*Document]int, len(docs))
	for i, d := range docs {
		order[d] = i
	}
	byDocument := func(p []Problem) func(i, j int) bool {
		return func(i, j int) bool { return order[p[i].Doc] < order[p[j].Doc] }
	}
	sort.SliceStable(c.problems, byDocument(c.problems))
	sort.SliceStable(c.notes, byDocument(c.notes))
	if len(c.problems) > 0 {
		return nil, c.problems
	}
	if len(c.objects) == 0 {
		return nil, ErrNothingToConvert
	}
	return &Result{Objects: c.objects, Notes: c.notes}, nil
}

// document dispatches one document on its apiVersion and kind.
func (c *converter) document(doc *Document) {
	group, version, _ := strings.Cut(doc.meta.APIVersion, "/")
	if !strings.Contains(doc.meta.APIVersion, "/") {
		group, version = "", doc.meta.APIVersion
	}
	switch {
	case doc.meta.APIVersion == "" || doc.meta.Kind == "":
		c.fail(doc, "", "apiVersion and kind must be set")
	case group == groupCore && version == "v1alpha5" && doc.meta.Kind == "Provisioner":
		c.provisioner(doc)
	case group == groupAWS && version == "v1alpha1" && doc.meta.Kind == "AWSNodeTemplate":
		c.awsNodeTemplate(doc)
	case group == groupCore && version == "v1beta1" && doc.meta.Kind == "NodePool":
		c.betaNodePool(doc)
	case group == groupAWS && version == "v1beta1" && doc.meta.Kind == "EC2NodeClass":
		c.betaEC2NodeClass(doc)
	case group == groupCore && version == "v1" && doc.meta.Kind == "NodePool",
		group == groupAWS && version == "v1" && doc.meta.Kind == "EC2NodeClass":
		c.objects = append(c.objects, &Object{From: doc, Raw: doc.JSON})
		if doc.meta.Kind == "EC2NodeClass" {
			c.v1Classes[doc.name] = true
		}
		c.note(doc, "", "already v1, passed through unchanged")
	case group == groupCore || group == groupAWS:
		c.unsupportedKarpenterKind(doc)
	default:
		c.note(doc, "", "not a Karpenter object, left out of the output (as upstream's karpenter-convert did)%s", oldAnnotationHint(doc.JSON))
	}
}

func (c *converter) unsupportedKarpenterKind(doc *Document) {
	switch doc.meta.Kind {
	case "Machine", "NodeClaim":
		c.fail(doc, "kind", "%s objects are created by Karpenter, not written by hand: leave them out and let Lathe create its own NodeClaims", doc.meta.Kind)
	default:
		c.fail(doc, "apiVersion", "cannot convert %s %s: only karpenter.sh/v1alpha5 Provisioner, karpenter.k8s.aws/v1alpha1 AWSNodeTemplate, karpenter.sh/v1beta1 NodePool and karpenter.k8s.aws/v1beta1 EC2NodeClass are converted", doc.meta.APIVersion, doc.meta.Kind)
	}
}

// addEC2NodeClass records a converted EC2NodeClass, refusing a second one of the same name.
func (c *converter) addEC2NodeClass(doc *Document, class *awsv1.EC2NodeClass) {
	if prev, ok := c.classes[class.Name]; ok {
		c.fail(doc, "metadata.name", "EC2NodeClass %q is also produced by %s", class.Name, prev.From)
		return
	}
	obj := &Object{From: doc, EC2NodeClass: class}
	c.classes[class.Name] = obj
	c.objects = append(c.objects, obj)
}

// objectMeta keeps what a manifest should carry over: name, labels and the annotations people set. The
// server-set fields go, and so do the annotations Karpenter's controllers and kubectl own (hashes, the
// conversion webhooks' compatibility annotations, kubectl's last-applied configuration).
func objectMeta(in metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: in.Name, Labels: in.Labels}
	for k, v := range in.Annotations {
		if ownedAnnotation(k) {
			continue
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[k] = v
	}
	return out
}

func ownedAnnotation(key string) bool {
	switch key {
	case "kubectl.kubernetes.io/last-applied-configuration",
		"karpenter.sh/provisioner-hash", "karpenter.sh/nodepool-hash", "karpenter.sh/nodepool-hash-version",
		"karpenter.k8s.aws/nodetemplate-hash", awsv1.AnnotationEC2NodeClassHash, awsv1.AnnotationEC2NodeClassHashVersion,
		"karpenter.sh/stored-version-migrated":
		return true
	}
	return strings.HasPrefix(key, "compatibility.karpenter.sh/") || strings.HasPrefix(key, "compatibility.karpenter.k8s.aws/")
}
