package checker

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// requestsOf is what a pod reserves on a node, by Kubernetes' rule: its containers and restartable init
// containers (sidecars) run together; each other init container runs alone beside the sidecars declared
// before it; the pod takes the larger of the two, plus its overhead, plus one pod slot.
func requestsOf(pod *corev1.Pod) corev1.ResourceList {
	running := corev1.ResourceList{}
	for _, ctr := range pod.Spec.Containers {
		addLists(running, ctr.Resources.Requests)
	}
	sidecars := corev1.ResourceList{}
	peak := corev1.ResourceList{}
	for _, ctr := range pod.Spec.InitContainers {
		if ctr.RestartPolicy != nil && *ctr.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addLists(sidecars, ctr.Resources.Requests)
			continue
		}
		alone := corev1.ResourceList{}
		addLists(alone, sidecars)
		addLists(alone, ctr.Resources.Requests)
		for name, q := range alone {
			if have, ok := peak[name]; !ok || q.Cmp(have) > 0 {
				peak[name] = q
			}
		}
	}
	addLists(running, sidecars)
	for name, q := range peak {
		if have, ok := running[name]; !ok || q.Cmp(have) > 0 {
			running[name] = q
		}
	}
	addLists(running, pod.Spec.Overhead)
	running[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return running
}

// untolerated returns the first taint with a NoSchedule or NoExecute effect that no toleration matches.
func untolerated(tolerations []corev1.Toleration, taints []corev1.Taint) (corev1.Taint, bool) {
	for _, taint := range taints {
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		tolerated := false
		for _, t := range tolerations {
			keyMatches := t.Key == taint.Key || (t.Key == "" && t.Operator == corev1.TolerationOpExists)
			effectMatches := t.Effect == "" || t.Effect == taint.Effect
			valueMatches := t.Operator == corev1.TolerationOpExists || t.Value == taint.Value
			if keyMatches && effectMatches && valueMatches {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return taint, true
		}
	}
	return corev1.Taint{}, false
}

// nodeTerms are the pod's alternative node rules: its node selector together with each required node
// affinity term (any one term suffices), or the node selector alone without terms.
func nodeTerms(pod *corev1.Pod) ([]labelRules, error) {
	selector := rulesOfLabels(pod.Spec.NodeSelector)
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return []labelRules{selector}, nil
	}
	var out []labelRules
	for i, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		rules, ok := rulesOf(term.MatchExpressions)
		if !ok {
			return nil, fmt.Errorf("node affinity term %d is invalid", i)
		}
		out = append(out, selector.and(rules))
	}
	return out, nil // no terms: matches no node
}
