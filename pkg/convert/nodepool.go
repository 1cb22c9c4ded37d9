package convert

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// v1beta1's consolidation policy that v1 renamed.
const policyWhenUnderutilized = "WhenUnderutilized"

// betaNodePool converts a karpenter.sh/v1beta1 NodePool.
func (c *converter) betaNodePool(doc *Document) {
	var in struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              nodePoolSpec    `json:"spec"`
		Status            json.RawMessage `json:"status,omitempty"`
	}
	if err := decodeStrict(doc.JSON, &in); err != nil {
		c.fail(doc, "", "decoding v1beta1 NodePool, %v", err)
		return
	}
	c.nodePoolFromBeta(doc, in.ObjectMeta, &in.Spec, "spec")
}

// nodePoolFromBeta builds the v1 NodePool for a v1beta1 spec, as Karpenter v1.0's conversion webhook does;
// field names the input's fields for messages ("spec" for a v1beta1 NodePool). The kubelet block is held
// back for moveKubelets.
func (c *converter) nodePoolFromBeta(doc *Document, meta metav1.ObjectMeta, in *nodePoolSpec, field string) {
	pool := &v1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: objectMeta(meta),
	}
	spec := &in.Template.Spec
	tmpl := field + ".template.spec"
	pool.Spec.Template.Labels = in.Template.Metadata.Labels
	pool.Spec.Template.Annotations = c.nodeAnnotations(doc, field+".template.metadata.annotations", in.Template.Metadata.Annotations)
	pool.Spec.Template.Spec.Taints = spec.Taints
	pool.Spec.Template.Spec.StartupTaints = spec.StartupTaints
	pool.Spec.Template.Spec.Requirements = make([]v1.NodeSelectorRequirementWithMinValues, 0, len(spec.Requirements))
	for _, r := range spec.Requirements {
		pool.Spec.Template.Spec.Requirements = append(pool.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
			Key: r.Key, Operator: r.Operator, Values: r.Values, MinValues: r.MinValues,
		})
	}
	pool.Spec.Template.Spec.NodeClassRef = c.nodeClassRef(doc, tmpl+".nodeClassRef", spec.NodeClassRef)
	if spec.Resources != nil && len(spec.Resources.Requests) > 0 {
		c.note(doc, tmpl+".resources", "dropped: v1 NodePool templates have no resources (NodeClaims get theirs from the pods)")
	}
	pool.Spec.Limits = v1.Limits(in.Limits)
	pool.Spec.Weight = in.Weight
	omitExpire := c.disruption(doc, field+".disruption", in.Disruption, pool)
	obj := &Object{From: doc, NodePool: pool, omitExpireAfter: omitExpire}
	c.objects = append(c.objects, obj)
	c.pools = append(c.pools, &pendingPool{
		doc: doc, field: c.fieldName(tmpl + ".kubelet"), pool: pool,
		kubelet: c.kubelet(doc, tmpl+".kubelet", spec.Kubelet),
	})
}

// nodeClassRef turns v1beta1's {apiVersion, kind, name} into v1's {group, kind, name}; v1beta1 left apiVersion
// and kind optional, and the webhook fills them with the provider's node class, EC2NodeClass.
func (c *converter) nodeClassRef(doc *Document, field string, ref *nodeClassRef) *v1.NodeClassReference {
	if ref == nil || ref.Name == "" {
		c.fail(doc, field+".name", "required: name the EC2NodeClass the nodes launch with")
		return &v1.NodeClassReference{}
	}
	out := &v1.NodeClassReference{Name: ref.Name, Kind: ref.Kind, Group: groupAWS}
	if out.Kind == "" {
		out.Kind = "EC2NodeClass"
	}
	if ref.APIVersion != "" {
		out.Group, _, _ = strings.Cut(ref.APIVersion, "/")
	}
	return out
}

// disruption maps spec.disruption: WhenUnderutilized becomes WhenEmptyOrUnderutilized with consolidateAfter
// 0s (v1 requires it; v1beta1 consolidated underutilized nodes without waiting), WhenEmpty keeps its
// consolidateAfter, expireAfter moves into the template, budgets carry over. It reports whether expireAfter
// was unset (v1's default then applies, the same 720h as v1beta1's).
func (c *converter) disruption(doc *Document, field string, in *disruption, pool *v1.NodePool) bool {
	if in == nil {
		in = &disruption{}
	}
	d := &pool.Spec.Disruption
	switch in.ConsolidationPolicy {
	case "", policyWhenUnderutilized:
		d.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
		d.ConsolidateAfter = c.duration(doc, field+".consolidateAfter", "0s")
		if in.ConsolidateAfter != nil {
			c.note(doc, field+".consolidateAfter", "set to 0s: v1beta1 did not wait before consolidating underutilized nodes (%q was not allowed with WhenUnderutilized)", *in.ConsolidateAfter)
		}
	case string(v1.ConsolidationPolicyWhenEmpty):
		d.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
		after := v1.Never
		if in.ConsolidateAfter != nil {
			after = *in.ConsolidateAfter
		} else {
			c.note(doc, field+".consolidateAfter", "set to Never: it was unset with WhenEmpty, and v1 requires it")
		}
		d.ConsolidateAfter = c.duration(doc, field+".consolidateAfter", after)
	default:
		c.fail(doc, field+".consolidationPolicy", "unknown policy %q: v1beta1 had WhenEmpty and WhenUnderutilized", in.ConsolidationPolicy)
	}
	for i, b := range in.Budgets {
		out := v1.Budget{Nodes: b.Nodes, Schedule: b.Schedule}
		if b.Duration != nil {
			dur, err := time.ParseDuration(*b.Duration)
			if err != nil {
				c.fail(doc, fmt.Sprintf("%s.budgets[%d].duration", field, i), "%v", err)
			}
			out.Duration = &metav1.Duration{Duration: dur}
		}
		d.Budgets = append(d.Budgets, out)
	}
	if in.ExpireAfter == nil {
		return true
	}
	pool.Spec.Template.Spec.ExpireAfter = c.duration(doc, field+".expireAfter", *in.ExpireAfter)
	return false
}

// duration parses "Never" or a Go duration and keeps its spelling for the output.
func (c *converter) duration(doc *Document, field, text string) v1.NillableDuration {
	d, err := v1.ParseNillableDuration(text)
	if err != nil {
		c.fail(doc, field, "%v", err)
		return d
	}
	if !d.IsNever() {
		d.Raw, _ = json.Marshal(text)
	}
	return d
}

// nodeAnnotations renames the annotations v1 dropped: karpenter.sh/do-not-evict and
// karpenter.sh/do-not-consolidate both became karpenter.sh/do-not-disrupt.
func (c *converter) nodeAnnotations(doc *Document, field string, in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := in[k]
		if k == annotationDoNotEvict || k == annotationDoNotConsolidate {
			c.note(doc, field, "%s renamed to %s", k, annotationDoNotDisrupt)
			k = annotationDoNotDisrupt
		}
		out[k] = v
	}
	return out
}

// The disruption annotations of v1alpha5 and their v1 replacement.
const (
	annotationDoNotEvict       = "karpenter.sh/do-not-evict"
	annotationDoNotConsolidate = "karpenter.sh/do-not-consolidate"
	annotationDoNotDisrupt     = "karpenter.sh/do-not-disrupt"
)

// oldAnnotationHint points at alpha disruption annotations in a document the converter leaves out (a
// workload's pod template, say), since v1 no longer honours them.
func oldAnnotationHint(doc []byte) string {
	s := string(doc)
	var found []string
	for _, k := range []string{annotationDoNotEvict, annotationDoNotConsolidate} {
		if strings.Contains(s, `"`+k+`"`) {
			found = append(found, k)
		}
	}
	if len(found) == 0 {
		return ""
	}
	return "; it uses " + strings.Join(found, " and ") + ", which v1 no longer honours: rename to " + annotationDoNotDisrupt
}

// kubelet converts a v1alpha5 or v1beta1 kubelet block to v1's (which lives on the EC2NodeClass).
func (c *converter) kubelet(doc *Document, field string, in *kubeletConfiguration) *awsv1.KubeletConfiguration {
	if in == nil {
		return nil
	}
	if in.ContainerRuntime != nil {
		if *in.ContainerRuntime == "containerd" {
			c.note(doc, field+".containerRuntime", "dropped: containerd is the only runtime v1 supports")
		} else {
			c.fail(doc, field+".containerRuntime", "%q is not supported: v1 only runs containerd", *in.ContainerRuntime)
		}
	}
	out := &awsv1.KubeletConfiguration{
		ClusterDNS:                  in.ClusterDNS,
		MaxPods:                     in.MaxPods,
		PodsPerCore:                 in.PodsPerCore,
		SystemReserved:              in.SystemReserved,
		KubeReserved:                in.KubeReserved,
		EvictionHard:                in.EvictionHard,
		EvictionSoft:                in.EvictionSoft,
		EvictionMaxPodGracePeriod:   in.EvictionMaxPodGracePeriod,
		ImageGCHighThresholdPercent: in.ImageGCHighThresholdPercent,
		ImageGCLowThresholdPercent:  in.ImageGCLowThresholdPercent,
		CPUCFSQuota:                 in.CPUCFSQuota,
	}
	for k, v := range in.EvictionSoftGracePeriod {
		d, err := time.ParseDuration(v)
		if err != nil {
			c.fail(doc, field+".evictionSoftGracePeriod."+k, "%v", err)
			continue
		}
		if out.EvictionSoftGracePeriod == nil {
			out.EvictionSoftGracePeriod = map[string]metav1.Duration{}
		}
		out.EvictionSoftGracePeriod[k] = metav1.Duration{Duration: d}
	}
	return out
}
