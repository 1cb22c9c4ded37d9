package v1

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Labels Lathe sets on NodeClaims and Nodes, under Karpenter's names.
const (
	NodePoolLabelKey        = Group + "/nodepool"
	CapacityTypeLabelKey    = Group + "/capacity-type"
	NodeRegisteredLabelKey  = Group + "/registered"
	NodeInitializedLabelKey = Group + "/initialized"
	NodeDoNotSyncTaintsKey  = Group + "/do-not-sync-taints"
)

// Values of the capacity-type label.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// Annotations Lathe reads and writes, under Karpenter's names.
const (
	DoNotDisruptAnnotationKey                  = Group + "/do-not-disrupt"
	NodePoolHashAnnotationKey                  = Group + "/nodepool-hash"
	NodePoolHashVersionAnnotationKey           = Group + "/nodepool-hash-version"
	NodeClaimTerminationTimestampAnnotationKey = Group + "/nodeclaim-termination-timestamp"
	NodeClaimMinValuesRelaxedAnnotationKey     = Group + "/nodeclaim-min-values-relaxed"
)

// TerminationFinalizer holds NodeClaims and Nodes until their instance is gone.
const TerminationFinalizer = Group + "/termination"

// Taints Lathe places on nodes it manages.
var (
	// DisruptedNoScheduleTaint keeps new pods off a node that is being disrupted or drained.
	DisruptedNoScheduleTaint = corev1.Taint{Key: Group + "/disrupted", Effect: corev1.TaintEffectNoSchedule}
	// UnregisteredNoExecuteTaint is on a node until Lathe has registered it to its NodeClaim.
	UnregisteredNoExecuteTaint = corev1.Taint{Key: Group + "/unregistered", Effect: corev1.TaintEffectNoExecute}
	// UnregisteredNoScheduleTaint is Lathe's own: while registration holds a new node (pkg/controllers/
	// nodeclaim/lifecycle), it replaces UnregisteredNoExecuteTaint, so that the node's NoExecute taint is
	// long gone by the time pods may bind to it.
	UnregisteredNoScheduleTaint = corev1.Taint{Key: Group + "/unregistered", Effect: corev1.TaintEffectNoSchedule}
)

// IsDisruptedTaint reports whether t is DisruptedNoScheduleTaint.
func IsDisruptedTaint(t corev1.Taint) bool { return t.MatchTaint(&DisruptedNoScheduleTaint) }

// IsUnregisteredTaint reports whether t is the unregistered taint, with either of its effects.
func IsUnregisteredTaint(t corev1.Taint) bool {
	return t.MatchTaint(&UnregisteredNoExecuteTaint) || t.MatchTaint(&UnregisteredNoScheduleTaint)
}

// IsKnownEphemeralTaint reports whether the node lifecycle or cloud controllers put the taint on every new
// Node and remove it once the node works (not-ready, unreachable, cloud-provider uninitialized).
func IsKnownEphemeralTaint(key string) bool {
	switch key {
	case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, "node.cloudprovider.kubernetes.io/uninitialized":
		return true
	}
	return false
}

// The well-known node label keys: the labels every NodeClaim's requirements may constrain and every
// instance type describes.
const (
	LabelTopologyZone   = corev1.LabelTopologyZone
	LabelTopologyRegion = corev1.LabelTopologyRegion
	LabelInstanceType   = corev1.LabelInstanceTypeStable
	LabelArch           = corev1.LabelArchStable
	LabelOS             = corev1.LabelOSStable
	LabelWindowsBuild   = corev1.LabelWindowsBuild
	LabelHostname       = corev1.LabelHostname
)

// WellKnownLabels returns the label keys that are always meaningful in requirements. The result is a new
// map the caller may modify.
func WellKnownLabels() map[string]bool {
	return map[string]bool{
		NodePoolLabelKey:     true,
		CapacityTypeLabelKey: true,
		LabelTopologyZone:    true,
		LabelTopologyRegion:  true,
		LabelInstanceType:    true,
		LabelArch:            true,
		LabelOS:              true,
		LabelWindowsBuild:    true,
	}
}

// normalizedLabels maps deprecated beta labels to the stable keys Lathe reasons about.
var normalizedLabels = map[string]string{
	corev1.LabelFailureDomainBetaZone:   LabelTopologyZone,
	corev1.LabelFailureDomainBetaRegion: LabelTopologyRegion,
	"beta.kubernetes.io/arch":           LabelArch,
	"beta.kubernetes.io/os":             LabelOS,
	corev1.LabelInstanceType:            LabelInstanceType,
}

// AddBetaLabels sets the deprecated beta twin of each stable label present, with the same value, as a node
// registers with them: the kubelet sets the os, arch and instance type twins, and the cloud's node controller
// the zone and region ones. A Node without the os and arch twins gets them from the node lifecycle
// controller, one more write per Node while a burst of Nodes waits for it to take off their not-ready
// taints.
func AddBetaLabels(labels map[string]string) {
	for beta, stable := range normalizedLabels {
		if v, ok := labels[stable]; ok {
			labels[beta] = v
		}
	}
}

// NormalizeLabelKey returns the stable key for a deprecated beta label, or the key unchanged.
func NormalizeLabelKey(key string) string {
	if stable, ok := normalizedLabels[key]; ok {
		return stable
	}
	return key
}

// restrictedLabelDomains are domains users may not set labels in, apart from the well-known labels. Like
// Karpenter v1.14, other kubernetes.io and k8s.io keys are allowed. (The karpenter.k8s.aws domain is
// restricted by the CRDs, which list its well-known labels.)
var restrictedLabelDomains = []string{Group}

// IsRestrictedLabel reports whether a NodePool may not set or require the label key, and why. It mirrors
// the CRD's CEL rules, for checks that run outside the API server (for example the offline simulator).
func IsRestrictedLabel(key string) (bool, string) {
	if key == LabelHostname {
		return true, `label "kubernetes.io/hostname" is restricted`
	}
	if key == NodePoolLabelKey {
		return true, `label "karpenter.sh/nodepool" is restricted`
	}
	if WellKnownLabels()[NormalizeLabelKey(key)] {
		return false, ""
	}
	domain, _, found := strings.Cut(key, "/")
	if !found {
		return false, ""
	}
	for _, restricted := range restrictedLabelDomains {
		if strings.HasSuffix(domain, restricted) {
			return true, `label domain "` + restricted + `" is restricted`
		}
	}
	return false, ""
}
