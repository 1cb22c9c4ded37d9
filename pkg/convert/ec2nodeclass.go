package convert

import (
	"encoding/json"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

// The v1beta1 AMI family v1 dropped.
const amiFamilyUbuntu = "Ubuntu"

// betaEC2NodeClass converts a karpenter.k8s.aws/v1beta1 EC2NodeClass.
func (c *converter) betaEC2NodeClass(doc *Document) {
	var in struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              ec2NodeClassSpec `json:"spec"`
		Status            json.RawMessage  `json:"status,omitempty"`
	}
	if err := decodeStrict(doc.JSON, &in); err != nil {
		c.fail(doc, "", "decoding v1beta1 EC2NodeClass, %v", err)
		return
	}
	c.ec2NodeClassFromBeta(doc, in.ObjectMeta, &in.Spec, "spec")
}

// ec2NodeClassFromBeta builds the v1 EC2NodeClass for a v1beta1 spec as Karpenter v1.0's conversion webhook
// does: a standard AMI family without amiSelectorTerms becomes the alias "<family>@latest"; with terms the
// family stays; Ubuntu becomes AL2 (same user data format) when terms select the images.
func (c *converter) ec2NodeClassFromBeta(doc *Document, meta metav1.ObjectMeta, in *ec2NodeClassSpec, field string) {
	class := &awsv1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: awsv1.SchemeGroupVersion.String(), Kind: "EC2NodeClass"},
		ObjectMeta: objectMeta(meta),
	}
	out := &class.Spec
	c.amis(doc, field, in, out)
	for _, t := range in.SubnetSelectorTerms {
		out.SubnetSelectorTerms = append(out.SubnetSelectorTerms, awsv1.SubnetSelectorTerm{Tags: t.Tags, ID: t.ID})
	}
	if len(out.SubnetSelectorTerms) == 0 {
		c.fail(doc, field+".subnetSelectorTerms", "required: select at least one subnet")
	}
	for _, t := range in.SecurityGroupSelectorTerms {
		out.SecurityGroupSelectorTerms = append(out.SecurityGroupSelectorTerms, awsv1.SecurityGroupSelectorTerm{Tags: t.Tags, ID: t.ID, Name: t.Name})
	}
	if len(out.SecurityGroupSelectorTerms) == 0 {
		c.fail(doc, field+".securityGroupSelectorTerms", "required: select at least one security group")
	}
	switch {
	case in.Role == "" && in.InstanceProfile == nil:
		c.fail(doc, field+".role", "required: v1 needs the node IAM role (or an instanceProfile)")
	case in.Role != "" && in.InstanceProfile != nil:
		c.fail(doc, field+".instanceProfile", "role and instanceProfile are mutually exclusive")
	}
	out.Role, out.InstanceProfile = in.Role, in.InstanceProfile
	out.AssociatePublicIPAddress = in.AssociatePublicIPAddress
	out.UserData = in.UserData
	out.Tags = in.Tags
	c.restrictedTags(doc, field+".tags", in.Tags)
	out.DetailedMonitoring = in.DetailedMonitoring
	out.Context = in.Context
	if in.InstanceStorePolicy != nil {
		out.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicy(*in.InstanceStorePolicy))
	}
	if out.BlockDeviceMappings == nil {
		out.BlockDeviceMappings = blockDeviceMappings(in.BlockDeviceMappings)
	}
	out.MetadataOptions = c.metadataOptions(doc, field+".metadataOptions", in.MetadataOptions)
	c.addEC2NodeClass(doc, class)
}

// amis sets amiSelectorTerms and amiFamily.
func (c *converter) amis(doc *Document, field string, in *ec2NodeClassSpec, out *awsv1.EC2NodeClassSpec) {
	for _, t := range in.AMISelectorTerms {
		if t.ID == "" && t.Name == "" && len(t.Tags) == 0 {
			c.fail(doc, field+".amiSelectorTerms", "a term with only an owner selects nothing in v1: add a name or tags")
		}
		out.AMISelectorTerms = append(out.AMISelectorTerms, awsv1.AMISelectorTerm{Tags: t.Tags, ID: t.ID, Name: t.Name, Owner: t.Owner})
	}
	if in.AMIFamily == nil {
		c.fail(doc, field+".amiFamily", "required in v1beta1: set the AMI family (AL2, AL2023, Bottlerocket, Windows2019, Windows2022, Custom)")
		return
	}
	family := *in.AMIFamily
	switch family {
	case awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022:
		if len(out.AMISelectorTerms) > 0 {
			out.AMIFamily = ptr.To(family)
			return
		}
		out.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: strings.ToLower(family) + "@latest"}}
	case awsv1.AMIFamilyCustom:
		if len(out.AMISelectorTerms) == 0 {
			c.fail(doc, field+".amiSelectorTerms", "required with amiFamily Custom: select the images")
		}
		out.AMIFamily = ptr.To(family)
	case amiFamilyUbuntu:
		if len(out.AMISelectorTerms) == 0 {
			c.fail(doc, field+".amiFamily", "Ubuntu has no alias in v1 (its automatic AMI selection was dropped): add amiSelectorTerms that select your Ubuntu AMIs, and the class will use the AL2 family, whose user data format Ubuntu shares")
			return
		}
		out.AMIFamily = ptr.To(awsv1.AMIFamilyAL2)
		c.note(doc, field+".amiFamily", "Ubuntu became AL2 (same user data format; v1 dropped Ubuntu)")
		if len(in.BlockDeviceMappings) == 0 {
			// Ubuntu's default root volume, which AL2's defaults would otherwise replace.
			out.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{
				DeviceName: ptr.To("/dev/sda1"),
				RootVolume: true,
				EBS:        &awsv1.BlockDevice{Encrypted: ptr.To(true), VolumeType: ptr.To("gp3"), VolumeSize: ptr.To(resource.MustParse("20Gi"))},
			}}
			c.note(doc, field+".blockDeviceMappings", "set to Ubuntu's default root volume (/dev/sda1, 20Gi gp3, encrypted)")
		}
	default:
		c.fail(doc, field+".amiFamily", "unknown AMI family %q", family)
	}
}

// blockDeviceMappings copies v1alpha1/v1beta1 block device mappings; the fields did not change.
func blockDeviceMappings(in []*blockDeviceMapping) []*awsv1.BlockDeviceMapping {
	var out []*awsv1.BlockDeviceMapping
	for _, m := range in {
		if m == nil {
			continue
		}
		o := &awsv1.BlockDeviceMapping{DeviceName: m.DeviceName, RootVolume: m.RootVolume}
		if e := m.EBS; e != nil {
			o.EBS = &awsv1.BlockDevice{
				DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted, IOPS: e.IOPS, KMSKeyID: e.KMSKeyID,
				SnapshotID: e.SnapshotID, Throughput: e.Throughput, VolumeSize: e.VolumeSize, VolumeType: e.VolumeType,
			}
		}
		out = append(out, o)
	}
	return out
}

// v1beta1HopLimit is v1beta1's (and v1alpha1's) default IMDS hop limit; v1 lowered the default to 1, which
// cuts containers without host networking off the instance metadata.
const v1beta1HopLimit = 2

// metadataOptions writes out v1beta1's defaults for what the source left unset, so nodes keep the IMDS access
// they had: the API server stored those defaults, and v1.0's webhook carried them over.
func (c *converter) metadataOptions(doc *Document, field string, in *metadataOptions) *awsv1.MetadataOptions {
	if in == nil {
		in = &metadataOptions{}
	}
	out := &awsv1.MetadataOptions{
		HTTPEndpoint:            in.HTTPEndpoint,
		HTTPProtocolIPv6:        in.HTTPProtocolIPv6,
		HTTPPutResponseHopLimit: in.HTTPPutResponseHopLimit,
		HTTPTokens:              in.HTTPTokens,
	}
	if out.HTTPEndpoint == nil {
		out.HTTPEndpoint = ptr.To("enabled")
	}
	if out.HTTPProtocolIPv6 == nil {
		out.HTTPProtocolIPv6 = ptr.To("disabled")
	}
	if out.HTTPTokens == nil {
		out.HTTPTokens = ptr.To("required")
	}
	if out.HTTPPutResponseHopLimit == nil {
		out.HTTPPutResponseHopLimit = ptr.To(int64(v1beta1HopLimit))
		c.note(doc, field+".httpPutResponseHopLimit", "set to 2, the v1beta1 default (v1 defaults to 1, which blocks IMDS for pods without host networking)")
	}
	return out
}

// restrictedTags fails on the tags v1 reserves for Karpenter itself (its CRD rejects them): the cluster and
// the node's pool, claim and class are tagged by the controller.
func (c *converter) restrictedTags(doc *Document, field string, tags map[string]string) {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case k == "eks:eks-cluster-name", k == "karpenter.sh/nodepool", k == "karpenter.sh/nodeclaim",
			k == awsv1.LabelNodeClass, strings.HasPrefix(k, "kubernetes.io/cluster"):
			c.fail(doc, field, "tag %q is restricted in v1 (Karpenter sets it on every instance): remove it", k)
		}
	}
}
