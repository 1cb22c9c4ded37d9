package v1

import (
	"strconv"

	"github.com/mitchellh/hashstructure/v2"
)

// NodePoolHashVersion is the hash scheme, written to karpenter.sh/nodepool-hash-version next to the hash.
// It changes when a hashed field is added or removed or a hashed field's default changes, so that a hash
// computed by an older scheme is never compared with one computed by this one.
const NodePoolHashVersion = "v3"

// Hash returns the pool's template hash, the value of karpenter.sh/nodepool-hash. It is computed as
// Karpenter computes it, so a NodeClaim launched by either has a hash the other recognises: hashstructure
// (format v2) over spec.template, slices hashed as sets, zero values and nil pointers left out, and every
// field tagged `hash:"ignore"` (requirements, resources, the raw text of durations) skipped. Reordering
// taints or spelling a duration differently does not change the hash.
func (in *NodePool) Hash() string {
	sum, err := hashstructure.Hash(in.Spec.Template, hashstructure.FormatV2, &hashstructure.HashOptions{
		SlicesAsSets:    true,
		IgnoreZeroValue: true,
		ZeroNil:         true,
	})
	if err != nil {
		// hashstructure fails only on kinds the template does not contain (channels, functions).
		panic("hashing nodepool template: " + err.Error())
	}
	return strconv.FormatUint(sum, 10)
}
