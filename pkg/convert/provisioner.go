package convert

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// provisioner converts a karpenter.sh/v1alpha5 Provisioner: first to a v1beta1 NodePool spec the way upstream's
// karpenter-convert (v0.32) did, then on to v1 like any v1beta1 NodePool. An inline spec.provider becomes an
// EC2NodeClass named after the Provisioner, written after the NodePool.
func (c *converter) provisioner(doc *Document) {
	var in struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              provisionerSpec `json:"spec"`
		Status            json.RawMessage `json:"status,omitempty"`
	}
	if err := decodeStrict(doc.JSON, &in); err != nil {
		c.fail(doc, "", "decoding v1alpha5 Provisioner, %v", err)
		return
	}
	spec := &in.Spec
	if !c.opts.IgnoreDefaults {
		spec.Requirements = withAlphaDefaults(spec.Requirements)
	}
	beta := &nodePoolSpec{Weight: spec.Weight}
	beta.Template.Metadata.Labels = spec.Labels
	beta.Template.Metadata.Annotations = spec.Annotations
	beta.Template.Spec.Taints = spec.Taints
	beta.Template.Spec.StartupTaints = spec.StartupTaints
	for _, r := range spec.Requirements {
		beta.Template.Spec.Requirements = append(beta.Template.Spec.Requirements, requirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
	}
	beta.Template.Spec.Kubelet = spec.KubeletConfiguration
	if spec.Limits != nil {
		beta.Limits = spec.Limits.Resources
	}
	beta.Disruption = c.alphaDisruption(doc, spec)

	var provider *awsNodeTemplateSpec
	switch {
	case spec.Provider != nil && spec.ProviderRef != nil:
		c.fail(doc, "spec.provider", "set together with spec.providerRef: keep one")
		return
	case spec.ProviderRef != nil:
		if spec.ProviderRef.Kind != "" && spec.ProviderRef.Kind != "AWSNodeTemplate" {
			c.fail(doc, "spec.providerRef.kind", "%q: only AWSNodeTemplate references are converted (to EC2NodeClass)", spec.ProviderRef.Kind)
			return
		}
		beta.Template.Spec.NodeClassRef = &nodeClassRef{Name: spec.ProviderRef.Name}
	case spec.Provider != nil:
		provider = &awsNodeTemplateSpec{}
		if err := decodeStrict(spec.Provider, &provider.awsProvider); err != nil {
			c.fail(doc, "spec.provider", "decoding the AWS provider, %v", err)
			return
		}
		beta.Template.Spec.NodeClassRef = &nodeClassRef{Name: in.Name}
	default:
		c.fail(doc, "spec.providerRef", "required: name the AWSNodeTemplate (or set spec.provider) the nodes launch with")
		return
	}
	// The NodePool keeps the Provisioner's metadata; its hash annotation goes with the other owned ones.
	c.renames = alphaPoolFields
	c.nodePoolFromBeta(doc, in.ObjectMeta, beta, "spec")
	c.renames = nil
	if provider != nil {
		c.nodeClassFromAlpha(doc, metav1.ObjectMeta{Name: in.Name}, provider, "spec.provider")
	}
}

// alphaPoolFields names the v1alpha5 fields behind the v1beta1 fields a Provisioner is converted through.
var alphaPoolFields = map[string]string{
	"spec.template.metadata.annotations": "spec.annotations",
	"spec.template.metadata.labels":      "spec.labels",
	"spec.template.spec.kubelet":         "spec.kubeletConfiguration",
	"spec.template.spec.nodeClassRef":    "spec.providerRef",
	"spec.template.spec":                 "spec",
	"spec.disruption.consolidateAfter":   "spec.ttlSecondsAfterEmpty",
	"spec.disruption.expireAfter":        "spec.ttlSecondsUntilExpired",
	"spec.disruption":                    "spec",
}

// alphaDisruption maps consolidation.enabled, ttlSecondsAfterEmpty and ttlSecondsUntilExpired as upstream's
// converter did (consolidation wins over ttlSecondsAfterEmpty; no ttlSecondsUntilExpired means Never), except
// that a Provisioner with neither consolidation nor ttlSecondsAfterEmpty, which never removed a node for being
// empty or underutilized, gets consolidateAfter Never instead of the v1beta1 default policy.
func (c *converter) alphaDisruption(doc *Document, spec *provisionerSpec) *disruption {
	d := &disruption{ExpireAfter: ptr.To(v1.Never)}
	if spec.TTLSecondsUntilExpired != nil {
		d.ExpireAfter = ptr.To(seconds(*spec.TTLSecondsUntilExpired))
	}
	switch {
	case spec.Consolidation != nil && ptr.Deref(spec.Consolidation.Enabled, false):
		d.ConsolidationPolicy = policyWhenUnderutilized
		if spec.TTLSecondsAfterEmpty != nil {
			c.note(doc, "spec.ttlSecondsAfterEmpty", "dropped: consolidation.enabled takes precedence (WhenEmptyOrUnderutilized removes empty nodes too)")
		}
	case spec.TTLSecondsAfterEmpty != nil:
		d.ConsolidationPolicy = string(v1.ConsolidationPolicyWhenEmpty)
		d.ConsolidateAfter = ptr.To(seconds(*spec.TTLSecondsAfterEmpty))
	default:
		d.ConsolidationPolicy = string(v1.ConsolidationPolicyWhenEmpty)
		d.ConsolidateAfter = ptr.To(v1.Never)
		c.note(doc, "spec.consolidation", "neither consolidation nor ttlSecondsAfterEmpty was set, so consolidateAfter is Never (the Provisioner never consolidated); set a policy and a duration to turn consolidation on")
	}
	return d
}

// seconds writes a whole number of seconds the way people write durations: 2592000 is "720h", 90 is "1m30s".
func seconds(n int64) string {
	d := time.Duration(n) * time.Second
	h, m, s := int64(d/time.Hour), int64(d%time.Hour/time.Minute), int64(d%time.Minute/time.Second)
	out := ""
	if h > 0 {
		out += fmt.Sprintf("%dh", h)
	}
	if m > 0 {
		out += fmt.Sprintf("%dm", m)
	}
	if s > 0 || out == "" {
		out += fmt.Sprintf("%ds", s)
	}
	return out
}

// withAlphaDefaults adds the requirements Karpenter's AWS webhook defaulted on v1alpha5 Provisioners (linux,
// amd64, on-demand, and instance categories c, m, r of generation > 2 when no instance type key is
// constrained). v1beta1 dropped the defaulting, so upstream's converter wrote them out; so does this one.
func withAlphaDefaults(in []corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement {
	has := map[string]bool{}
	for _, r := range in {
		has[r.Key] = true
	}
	out := append([]corev1.NodeSelectorRequirement(nil), in...)
	if !has[corev1.LabelOSStable] {
		out = append(out, corev1.NodeSelectorRequirement{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{string(corev1.Linux)}})
	}
	if !has[corev1.LabelArchStable] {
		out = append(out, corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}})
	}
	if !has[v1.CapacityTypeLabelKey] {
		out = append(out, corev1.NodeSelectorRequirement{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}})
	}
	if !has[corev1.LabelInstanceTypeStable] && !has[awsv1.LabelInstanceFamily] && !has[awsv1.LabelInstanceCategory] && !has[awsv1.LabelInstanceGeneration] {
		out = append(out,
			corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
			corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceGeneration, Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}},
		)
	}
	return out
}
