package solver

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// volumeIndex finds the zone requirements of a pod's persistent volume claims: a bound volume's node
// affinity, or an unbound claim's StorageClass allowedTopologies.
type volumeIndex struct {
	claims  map[string]*corev1.PersistentVolumeClaim // namespace/name
	volumes map[string]*corev1.PersistentVolume
	classes map[string]*storagev1.StorageClass
}

func newVolumeIndex(v Volumes) *volumeIndex {
	idx := &volumeIndex{claims: map[string]*corev1.PersistentVolumeClaim{}, volumes: map[string]*corev1.PersistentVolume{}, classes: map[string]*storagev1.StorageClass{}}
	for _, c := range v.Claims {
		idx.claims[c.Namespace+"/"+c.Name] = c
	}
	for _, pv := range v.Volumes {
		idx.volumes[pv.Name] = pv
	}
	for _, sc := range v.StorageClasses {
		idx.classes[sc.Name] = sc
	}
	return idx
}

// requirements returns the node requirements the pod's volumes add, or nil. Only the first node selector
// term of a volume or topology is used. A claim that doesn't exist is an error: the pod can't run yet.
func (idx *volumeIndex) requirements(pod *corev1.Pod) (scheduling.Requirements, error) {
	var out scheduling.Requirements
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim == nil {
			continue
		}
		claim, ok := idx.claims[pod.Namespace+"/"+vol.PersistentVolumeClaim.ClaimName]
		if !ok {
			// kube-scheduler can't bind the pod until the claim exists, so no node is launched for it
			// (as Karpenter's volume validation).
			return nil, fmt.Errorf("volume %q, persistent volume claim %q not found", vol.Name, vol.PersistentVolumeClaim.ClaimName)
		}
		reqs, err := idx.claimRequirements(claim)
		if err != nil {
			return nil, fmt.Errorf("volume %q, %w", vol.Name, err)
		}
		if reqs != nil {
			out = out.Intersection(reqs)
		}
	}
	return out, nil
}

func (idx *volumeIndex) claimRequirements(claim *corev1.PersistentVolumeClaim) (scheduling.Requirements, error) {
	if claim.Spec.VolumeName != "" {
		pv, ok := idx.volumes[claim.Spec.VolumeName]
		if !ok || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil || len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) == 0 {
			return nil, nil
		}
		return scheduling.FromNodeSelectorRequirements(pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions)
	}
	if claim.Spec.StorageClassName == nil {
		return nil, nil
	}
	sc, ok := idx.classes[*claim.Spec.StorageClassName]
	if !ok || len(sc.AllowedTopologies) == 0 {
		return nil, nil
	}
	var nsr []corev1.NodeSelectorRequirement
	for _, e := range sc.AllowedTopologies[0].MatchLabelExpressions {
		nsr = append(nsr, corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOpIn, Values: e.Values})
	}
	return scheduling.FromNodeSelectorRequirements(nsr)
}
