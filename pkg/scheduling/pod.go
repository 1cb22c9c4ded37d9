package scheduling

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodRequirements returns the node requirements a pod places: its nodeSelector ANDed with each required node
// affinity term. Terms are ORed by Kubernetes, so the result has one Requirements per term (or one when the
// pod has no required affinity), in the pod's order.
func PodRequirements(pod *corev1.Pod) ([]Requirements, error) {
	base := FromLabels(pod.Spec.NodeSelector)
	affinity := pod.Spec.Affinity
	if affinity == nil || affinity.NodeAffinity == nil || affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return []Requirements{base}, nil
	}
	terms := affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	var out []Requirements
	for i, term := range terms {
		reqs, err := FromNodeSelectorRequirements(term.MatchExpressions)
		if err != nil {
			return nil, fmt.Errorf("node affinity term %d, %w", i, err)
		}
		out = append(out, base.Intersection(reqs))
	}
	if len(out) == 0 { // an empty term list matches nothing in Kubernetes; keep it visible as an empty set
		return []Requirements{NewRequirements(MustRequirement("node-affinity", corev1.NodeSelectorOpIn))}, nil
	}
	return out, nil
}

// WeightedRequirements is a preferred node affinity term.
type WeightedRequirements struct {
	Weight       int32
	Requirements Requirements
}

// PodPreferredRequirements returns the pod's preferred node affinity terms, heaviest first (stable for ties).
func PodPreferredRequirements(pod *corev1.Pod) ([]WeightedRequirements, error) {
	affinity := pod.Spec.Affinity
	if affinity == nil || affinity.NodeAffinity == nil {
		return nil, nil
	}
	var out []WeightedRequirements
	for i, term := range affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		reqs, err := FromNodeSelectorRequirements(term.Preference.MatchExpressions)
		if err != nil {
			return nil, fmt.Errorf("preferred node affinity term %d, %w", i, err)
		}
		out = append(out, WeightedRequirements{Weight: term.Weight, Requirements: reqs})
	}
	for i := 1; i < len(out); i++ { // insertion sort: stable and tiny
		for j := i; j > 0 && out[j].Weight > out[j-1].Weight; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, nil
}

// PodRequests returns what a pod needs from a node: for each resource, the larger of (a) the sum of the app
// containers plus restartable init (sidecar) containers and (b) the peak during init, where each ordinary
// init container runs alone next to the sidecars started before it. Pod overhead is added, and one "pods"
// slot is always requested.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		AddResources(total, c.Resources.Requests)
	}
	sidecars := corev1.ResourceList{}
	initPeak := corev1.ResourceList{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			AddResources(sidecars, c.Resources.Requests)
			continue
		}
		during := sidecars.DeepCopy()
		AddResources(during, c.Resources.Requests)
		maxList(initPeak, during)
	}
	AddResources(total, sidecars)
	maxList(total, initPeak)
	AddResources(total, pod.Spec.Overhead)
	total[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return total
}

// AddResources adds every quantity of src to dst.
func AddResources(dst, src corev1.ResourceList) {
	for name, q := range src {
		sum := dst[name]
		sum.Add(q)
		dst[name] = sum
	}
}

func maxList(dst, src corev1.ResourceList) {
	for name, q := range src {
		if current, ok := dst[name]; !ok || q.Cmp(current) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}
