package disruption

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// pdbLimits are the PodDisruptionBudgets with their selectors parsed once per pass.
type pdbLimits []pdbItem

type pdbItem struct {
	key        string
	namespace  string
	selector   labels.Selector
	allowed    int32
	evictsSick bool // unhealthyPodEvictionPolicy AlwaysAllow
}

func newPDBLimits(pdbs []*policyv1.PodDisruptionBudget) pdbLimits {
	out := make(pdbLimits, 0, len(pdbs))
	for _, pdb := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			sel = labels.Everything() // an unreadable selector blocks what it might match rather than nothing
		}
		out = append(out, pdbItem{
			key: pdb.Namespace + "/" + pdb.Name, namespace: pdb.Namespace, selector: sel,
			allowed:    pdb.Status.DisruptionsAllowed,
			evictsSick: pdb.Spec.UnhealthyPodEvictionPolicy != nil && *pdb.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow,
		})
	}
	return out
}

// blocking returns why the PDBs would refuse evicting one of the pods at now, "" when they all allow it.
// Like the Eviction API, a pod matched by more than one PDB cannot be evicted at all.
func (l pdbLimits) blocking(pods []*corev1.Pod, now time.Time) string {
	for _, pod := range pods {
		if !evictable(pod, now) {
			continue
		}
		var matching []pdbItem
		for _, p := range l {
			if p.namespace == pod.Namespace && p.selector.Matches(labels.Set(pod.Labels)) {
				matching = append(matching, p)
			}
		}
		if len(matching) > 1 {
			keys := make([]string, len(matching))
			for i, m := range matching {
				keys[i] = m.key
			}
			return fmt.Sprintf("eviction does not support multiple PDBs (pod %s/%s, PodDisruptionBudgets %s)", pod.Namespace, pod.Name, strings.Join(keys, ", "))
		}
		if len(matching) == 1 && matching[0].allowed <= 0 && !(matching[0].evictsSick && unready(pod)) {
			return fmt.Sprintf("pdb %s prevents pod evictions (pod %s/%s)", matching[0].key, pod.Namespace, pod.Name)
		}
	}
	return ""
}

func unready(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionFalse
		}
	}
	return false
}
