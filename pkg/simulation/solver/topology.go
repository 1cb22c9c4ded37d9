package solver

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// group identifies pods counted per topology domain: either the pods a selector matches (for spreads and
// affinities) or the pods that own an anti-affinity term (so that anti-affinity is enforced in both
// directions). The counts themselves live in each run (groupCounts), so runs can proceed in parallel.
type group struct {
	id         int
	key        string          // topology key
	namespaces map[string]bool // nil means every namespace
	selector   labels.Selector
	// perTarget keeps the group's counts on each target as well, for spreads that count only some targets
	// (set while preparing, read-only during runs).
	perTarget bool
}

func (g *group) matches(namespace string, podLabels map[string]string) bool {
	return (g.namespaces == nil || g.namespaces[namespace]) && g.selector.Matches(labels.Set(podLabels))
}

// groupCounts are one run's pod counts per group and domain.
type groupCounts struct {
	byDomain []map[string]int // by group id
	nonZero  []int            // domains with a non-zero count, by group id
}

func newGroupCounts(n int) *groupCounts {
	gc := &groupCounts{byDomain: make([]map[string]int, n), nonZero: make([]int, n)}
	for i := range gc.byDomain {
		gc.byDomain[i] = map[string]int{}
	}
	return gc
}

// record counts one pod of group g in domain of target t. Hostname counts are also kept on the target
// itself, where the hot path reads them without hashing, and so are those of perTarget groups.
func (gc *groupCounts) record(g *group, t *target, domain string) {
	counts := gc.byDomain[g.id]
	if counts[domain] == 0 {
		gc.nonZero[g.id]++
	}
	counts[domain]++
	if g.key == v1.LabelHostname || g.perTarget {
		if len(t.hostCounts) <= g.id {
			t.hostCounts = append(t.hostCounts, make([]int32, g.id+1-len(t.hostCounts))...)
		}
		t.hostCounts[g.id]++
	}
}

// count is the number of pods group g counts in domain d of target t (t may be nil for non-hostname keys).
func (gc *groupCounts) count(g *group, t *target, d string) int {
	if g.key == v1.LabelHostname && t != nil {
		if g.id < len(t.hostCounts) {
			return int(t.hostCounts[g.id])
		}
		return 0
	}
	return gc.byDomain[g.id][d]
}

// topology owns every group, deduplicated by identity.
type topology struct {
	groups []*group
	byKey  map[string]*group
}

func newTopology() *topology { return &topology{byKey: map[string]*group{}} }

func (t *topology) group(kind, key string, namespaces []string, selector labels.Selector) *group {
	var nsKey string
	var nsSet map[string]bool
	if namespaces != nil {
		ns := slices.Clone(namespaces)
		slices.Sort(ns)
		nsKey = strings.Join(ns, ",")
		nsSet = map[string]bool{}
		for _, n := range ns {
			nsSet[n] = true
		}
	} else {
		nsKey = "*"
	}
	id := kind + "|" + key + "|" + nsKey + "|" + selector.String()
	if g, ok := t.byKey[id]; ok {
		return g
	}
	g := &group{id: len(t.groups), key: key, namespaces: nsSet, selector: selector}
	t.groups = append(t.groups, g)
	t.byKey[id] = g
	return g
}

// spreadConstraint is a parsed topology spread constraint.
type spreadConstraint struct {
	group      *group
	maxSkew    int
	minDomains int
	selfMatch  bool
	// honorTaints and honorAffinity are the node inclusion policies.
	honorTaints, honorAffinity bool
	// filter is nil when the policies include every node and claim for the pod (inclusion.go).
	filter *nodeFilter
	soft   bool
	// universe is the domains the spread counts for its pod (eligible zones, capacity types, ...).
	universe []string
}

// affinityTerm is a parsed pod affinity or anti-affinity term.
type affinityTerm struct {
	group     *group // pods the term selects
	owners    *group // for anti-affinity: pods owning this term
	selfMatch bool
	weight    int32 // 0 for required terms
	anti      bool
}

func selectorFor(ls *metav1.LabelSelector, matchLabelKeys []string, podLabels map[string]string) labels.Selector {
	selector, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		selector = labels.Nothing()
	}
	for _, k := range matchLabelKeys {
		if v, ok := podLabels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.Equals, []string{v}); err == nil {
				selector = selector.Add(*r)
			}
		}
	}
	return selector
}

func termNamespaces(pod *corev1.Pod, term *corev1.PodAffinityTerm) []string {
	if term.NamespaceSelector != nil && len(term.NamespaceSelector.MatchLabels) == 0 && len(term.NamespaceSelector.MatchExpressions) == 0 {
		return nil // an empty namespace selector selects every namespace
	}
	if len(term.Namespaces) > 0 {
		return term.Namespaces
	}
	return []string{pod.Namespace}
}

func (t *topology) spread(pod *corev1.Pod, c corev1.TopologySpreadConstraint) *spreadConstraint {
	g := t.group("match", c.TopologyKey, []string{pod.Namespace}, selectorFor(c.LabelSelector, c.MatchLabelKeys, pod.Labels))
	s := &spreadConstraint{
		group:         g,
		maxSkew:       int(max(c.MaxSkew, 1)),
		minDomains:    1,
		soft:          c.WhenUnsatisfiable == corev1.ScheduleAnyway,
		honorAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor,
		honorTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor,
	}
	if c.MinDomains != nil {
		s.minDomains = int(*c.MinDomains)
	}
	s.selfMatch = g.matches(pod.Namespace, pod.Labels)
	return s
}

func (t *topology) affinity(pod *corev1.Pod, term *corev1.PodAffinityTerm, weight int32, anti bool) *affinityTerm {
	namespaces := termNamespaces(pod, term)
	selector := selectorFor(term.LabelSelector, term.MatchLabelKeys, pod.Labels)
	a := &affinityTerm{group: t.group("match", term.TopologyKey, namespaces, selector), weight: weight, anti: anti}
	if anti && weight == 0 { // only required anti-affinity binds other pods (symmetry); preferred is soft
		a.owners = t.group("owner", term.TopologyKey, namespaces, selector)
	}
	a.selfMatch = a.group.matches(pod.Namespace, pod.Labels)
	return a
}
