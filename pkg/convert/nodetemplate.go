package convert

import (
	"encoding/json"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

// RolePlaceholder is the node role written for an AWSNodeTemplate without instanceProfile, as upstream's
// converter did: v1alpha1 could fall back to a global default instance profile, v1 cannot. Substitute it
// (for example with envsubst) before applying.
const RolePlaceholder = "$KARPENTER_NODE_ROLE"

// awsNodeTemplate converts a karpenter.k8s.aws/v1alpha1 AWSNodeTemplate.
func (c *converter) awsNodeTemplate(doc *Document) {
	var in struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              awsNodeTemplateSpec `json:"spec"`
		Status            json.RawMessage     `json:"status,omitempty"`
	}
	if err := decodeStrict(doc.JSON, &in); err != nil {
		c.fail(doc, "", "decoding v1alpha1 AWSNodeTemplate, %v", err)
		return
	}
	c.nodeClassFromAlpha(doc, in.ObjectMeta, &in.Spec, "spec")
}

// nodeClassFromAlpha converts v1alpha1 AWS settings (an AWSNodeTemplate's spec, or a Provisioner's inline
// spec.provider, named by field) to a v1beta1 EC2NodeClass spec as upstream's converter did, then on to v1.
func (c *converter) nodeClassFromAlpha(doc *Document, meta metav1.ObjectMeta, in *awsNodeTemplateSpec, field string) {
	if in.LaunchTemplateName != nil {
		c.fail(doc, field+".launchTemplate", "cannot convert a launch template reference: v1 EC2NodeClasses have no launchTemplate; move its settings (AMI, user data, block devices, metadata options, security groups) into the EC2NodeClass's own fields")
		return
	}
	beta := &ec2NodeClassSpec{
		AMIFamily:           in.AMIFamily,
		UserData:            in.UserData,
		Tags:                in.Tags,
		InstanceProfile:     in.InstanceProfile,
		BlockDeviceMappings: in.BlockDeviceMappings,
		DetailedMonitoring:  in.DetailedMonitoring,
		MetadataOptions:     in.MetadataOptions,
		Context:             in.Context,
	}
	if beta.AMIFamily == nil {
		// v1alpha1 defaulted the family to AL2.
		beta.AMIFamily = ptr.To(awsv1.AMIFamilyAL2)
	}
	if beta.InstanceProfile == nil {
		beta.Role = RolePlaceholder
		c.note(doc, field+".instanceProfile", "unset (v1alpha1 fell back to the global default instance profile): role is the placeholder %s; substitute the node role before applying", RolePlaceholder)
	}
	ids, tags := c.selector(doc, field+".subnetSelector", in.SubnetSelector)
	for _, id := range ids {
		beta.SubnetSelectorTerms = append(beta.SubnetSelectorTerms, subnetTerm{ID: id})
	}
	for _, t := range tags {
		beta.SubnetSelectorTerms = append(beta.SubnetSelectorTerms, subnetTerm{Tags: t})
	}
	ids, tags = c.selector(doc, field+".securityGroupSelector", in.SecurityGroupSelector)
	for _, id := range ids {
		beta.SecurityGroupSelectorTerms = append(beta.SecurityGroupSelectorTerms, securityGroupTerm{ID: id})
	}
	for _, t := range tags {
		beta.SecurityGroupSelectorTerms = append(beta.SecurityGroupSelectorTerms, securityGroupTerm{Tags: t})
	}
	beta.AMISelectorTerms = c.amiSelector(doc, field+".amiSelector", in.AMISelector)
	c.renames = map[string]string{
		"spec.subnetSelectorTerms":        field + ".subnetSelector",
		"spec.securityGroupSelectorTerms": field + ".securityGroupSelector",
		"spec.amiSelectorTerms":           field + ".amiSelector",
		"spec.role":                       field + ".instanceProfile",
		"spec":                            field,
	}
	c.ec2NodeClassFromBeta(doc, meta, beta, "spec")
	c.renames = nil
}

// selector splits a v1alpha1 subnet or security group selector into ids ("aws::ids" or "aws-ids", comma
// separated) and tag sets (one per combination of comma-separated tag values), as upstream's converter did.
// v1 does not combine an id with other fields in a term, so with ids the tags are dropped: the ids already
// name the exact resources.
func (c *converter) selector(doc *Document, field string, sel map[string]string) (ids []string, tagSets []map[string]string) {
	tags := map[string]string{}
	for k, v := range sel {
		if k == "aws::ids" || k == "aws-ids" {
			ids = splitList(v)
			continue
		}
		tags[k] = v
	}
	if len(ids) > 0 {
		if len(tags) > 0 {
			c.note(doc, field, "tags dropped next to aws::ids: a v1 id term stands alone, and the ids already name the resources")
		}
		return ids, nil
	}
	return nil, tagCombinations(tags)
}

// amiSelector converts a v1alpha1 amiSelector: "aws::ids", "aws::name" and "aws::owners" (comma separated)
// and tags become one term per combination, owners outermost, as upstream's converter ordered them.
func (c *converter) amiSelector(doc *Document, field string, sel map[string]string) []amiTerm {
	if len(sel) == 0 {
		return nil
	}
	var ids, names, owners []string
	tags := map[string]string{}
	for k, v := range sel {
		switch k {
		case "aws::ids", "aws-ids":
			ids = splitList(v)
		case "aws::name":
			names = splitList(v)
		case "aws::owners":
			owners = splitList(v)
		default:
			tags[k] = v
		}
	}
	var terms []amiTerm
	if len(ids) > 0 {
		if len(names)+len(owners)+len(tags) > 0 {
			c.note(doc, field, "aws::name, aws::owners and tags dropped next to aws::ids: a v1 id term stands alone, and the ids already name the images")
		}
		for _, id := range ids {
			terms = append(terms, amiTerm{ID: id})
		}
		return terms
	}
	if len(owners) == 0 {
		owners = []string{""}
	}
	if len(names) == 0 {
		names = []string{""}
	}
	tagSets := tagCombinations(tags)
	if len(tagSets) == 0 {
		tagSets = []map[string]string{nil}
	}
	for _, owner := range owners {
		for _, name := range names {
			for _, t := range tagSets {
				terms = append(terms, amiTerm{Owner: owner, Name: name, Tags: t})
			}
		}
	}
	return terms
}

// tagCombinations expands tag values written as comma-separated lists into one tag set per combination,
// keys in order. No tags give no sets.
func tagCombinations(tags map[string]string) []map[string]string {
	if len(tags) == 0 {
		return nil
	}
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	sets := []map[string]string{{}}
	for _, k := range keys {
		var next []map[string]string
		for _, v := range splitList(tags[k]) {
			for _, set := range sets {
				n := make(map[string]string, len(set)+1)
				for sk, sv := range set {
					n[sk] = sv
				}
				n[k] = v
				next = append(next, n)
			}
		}
		sets = next
	}
	return sets
}

func splitList(s string) []string {
	parts := strings.Split(s, ",")
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		out = append(out, strings.TrimSpace(p))
	}
	return out
}
