package v1

import "strings"

// aliasFamilies maps the family part of an AMI alias to its AMIFamily.
var aliasFamilies = map[string]string{
	"al2":          AMIFamilyAL2,
	"al2023":       AMIFamilyAL2023,
	"bottlerocket": AMIFamilyBottlerocket,
	"windows2019":  AMIFamilyWindows2019,
	"windows2022":  AMIFamilyWindows2022,
	"windows2025":  AMIFamilyWindows2025,
}

// AMIFamily is the node class's AMI family: spec.amiFamily when set, otherwise the family of its alias
// term, otherwise Custom.
func (in *EC2NodeClass) AMIFamily() string {
	if in.Spec.AMIFamily != nil && *in.Spec.AMIFamily != "" {
		return *in.Spec.AMIFamily
	}
	for _, term := range in.Spec.AMISelectorTerms {
		if family, _, ok := strings.Cut(term.Alias, "@"); ok {
			if f, known := aliasFamilies[strings.ToLower(family)]; known {
				return f
			}
		}
	}
	return AMIFamilyCustom
}
