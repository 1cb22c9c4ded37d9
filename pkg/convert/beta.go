package convert

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// The types below model karpenter.sh/v1beta1 and karpenter.k8s.aws/v1beta1 (Karpenter v0.32 to v0.37) as far
// as conversion reads them; as with the alpha types, strict decoding rejects fields v1beta1 never had.

// nodePoolSpec is a v1beta1 NodePool's spec.
type nodePoolSpec struct {
	Template struct {
		Metadata struct {
			Labels      map[string]string `json:"labels,omitempty"`
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"metadata,omitempty"`
		Spec nodeClaimSpec `json:"spec"`
	} `json:"template"`
	Disruption *disruption         `json:"disruption,omitempty"`
	Limits     corev1.ResourceList `json:"limits,omitempty"`
	Weight     *int32              `json:"weight,omitempty"`
}

// nodeClaimSpec is the spec of a v1beta1 NodePool's template.
type nodeClaimSpec struct {
	Taints        []corev1.Taint `json:"taints,omitempty"`
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	Requirements  []requirement  `json:"requirements"`
	Resources     *struct {
		Requests corev1.ResourceList `json:"requests,omitempty"`
	} `json:"resources,omitempty"`
	Kubelet      *kubeletConfiguration `json:"kubelet,omitempty"`
	NodeClassRef *nodeClassRef         `json:"nodeClassRef"`
}

// requirement is a v1beta1 node selector requirement, with minValues (v0.35 on).
type requirement struct {
	Key       string                      `json:"key"`
	Operator  corev1.NodeSelectorOperator `json:"operator"`
	Values    []string                    `json:"values,omitempty"`
	MinValues *int                        `json:"minValues,omitempty"`
}

// nodeClassRef is a v1beta1 NodePool's spec.template.spec.nodeClassRef.
type nodeClassRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name"`
}

// disruption is a v1beta1 NodePool's spec.disruption; durations stay text so the output keeps their spelling.
type disruption struct {
	ConsolidateAfter    *string  `json:"consolidateAfter,omitempty"`
	ConsolidationPolicy string   `json:"consolidationPolicy,omitempty"`
	ExpireAfter         *string  `json:"expireAfter,omitempty"`
	Budgets             []budget `json:"budgets,omitempty"`
}

// budget is a v1beta1 disruption budget.
type budget struct {
	Nodes    string  `json:"nodes"`
	Schedule *string `json:"schedule,omitempty"`
	Duration *string `json:"duration,omitempty"`
}

// ec2NodeClassSpec is a v1beta1 EC2NodeClass's spec.
type ec2NodeClassSpec struct {
	SubnetSelectorTerms        []subnetTerm          `json:"subnetSelectorTerms"`
	SecurityGroupSelectorTerms []securityGroupTerm   `json:"securityGroupSelectorTerms"`
	AssociatePublicIPAddress   *bool                 `json:"associatePublicIPAddress,omitempty"`
	AMISelectorTerms           []amiTerm             `json:"amiSelectorTerms,omitempty"`
	AMIFamily                  *string               `json:"amiFamily"`
	UserData                   *string               `json:"userData,omitempty"`
	Role                       string                `json:"role,omitempty"`
	InstanceProfile            *string               `json:"instanceProfile,omitempty"`
	Tags                       map[string]string     `json:"tags,omitempty"`
	BlockDeviceMappings        []*blockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	InstanceStorePolicy        *string               `json:"instanceStorePolicy,omitempty"`
	DetailedMonitoring         *bool                 `json:"detailedMonitoring,omitempty"`
	MetadataOptions            *metadataOptions      `json:"metadataOptions,omitempty"`
	Context                    *string               `json:"context,omitempty"`
}

// subnetTerm is a v1beta1 subnet selector term.
type subnetTerm struct {
	Tags map[string]string `json:"tags,omitempty"`
	ID   string            `json:"id,omitempty"`
}

// securityGroupTerm is a v1beta1 security group selector term.
type securityGroupTerm struct {
	Tags map[string]string `json:"tags,omitempty"`
	ID   string            `json:"id,omitempty"`
	Name string            `json:"name,omitempty"`
}

// amiTerm is a v1beta1 AMI selector term.
type amiTerm struct {
	Tags  map[string]string `json:"tags,omitempty"`
	ID    string            `json:"id,omitempty"`
	Name  string            `json:"name,omitempty"`
	Owner string            `json:"owner,omitempty"`
}

// textMap is a string map that also takes numbers and booleans as values: YAML writes `cpu: 1` unquoted,
// and v1alpha5 typed some of these maps as resource quantities.
type textMap map[string]string

// UnmarshalJSON reads an object whose values are strings, numbers or booleans.
func (m *textMap) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(textMap, len(raw))
	for k, v := range raw {
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			out[k] = s
			continue
		}
		var f json.Number
		if err := json.Unmarshal(v, &f); err == nil {
			out[k] = f.String()
			continue
		}
		var bv bool
		if err := json.Unmarshal(v, &bv); err == nil {
			out[k] = strconv.FormatBool(bv)
			continue
		}
		return fmt.Errorf("value of %q must be a string or a number", k)
	}
	*m = out
	return nil
}
