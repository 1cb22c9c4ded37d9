package v1

import (
	"strconv"

	"github.com/mitchellh/hashstructure/v2"
)

// EC2NodeClassHashVersion is the hash scheme, written to karpenter.k8s.aws/ec2nodeclass-hash-version next
// to the hash (Karpenter v1.14's scheme). It changes when a hashed field is added or removed, a hashed
// field's default or type changes, so that hashes of different schemes are never compared.
const EC2NodeClassHashVersion = "v5"

// Hash returns the node class's static-field hash, the value of karpenter.k8s.aws/ec2nodeclass-hash, as
// Karpenter computes it, so a NodeClaim launched by either carries a hash the other recognises:
// hashstructure (format v2) over the spec, the resolved AMI family and the cluster CA bundle, slices hashed
// as sets, zero values and nil pointers left out, fields tagged `hash:"ignore"` (the selector terms, the
// literal amiFamily, ipPrefixCount) skipped and volume sizes hashed as their text.
func (in *EC2NodeClass) Hash(caBundle *string) string {
	var ca string
	if caBundle != nil {
		ca = *caBundle
	}
	sum, err := hashstructure.Hash([]any{in.Spec, in.AMIFamily(), ca}, hashstructure.FormatV2, &hashstructure.HashOptions{
		SlicesAsSets:    true,
		IgnoreZeroValue: true,
		ZeroNil:         true,
	})
	if err != nil {
		// hashstructure fails only on kinds the spec does not contain (channels, functions).
		panic("hashing ec2nodeclass spec: " + err.Error())
	}
	return strconv.FormatUint(sum, 10)
}
