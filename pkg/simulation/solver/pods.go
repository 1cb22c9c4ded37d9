package solver

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// podInfo is a pod parsed once into what placement needs.
type podInfo struct {
	pod   *corev1.Pod
	ref   PodRef
	index int // position in Input.Pods (negative for pods already bound), for deterministic ordering

	requests vec
	terms    []scheduling.Requirements // required node affinity terms (ORed), with nodeSelector and volume zones
	// selectorTerms are terms without the volume zones: what nodeAffinityPolicy Honor matches nodes with.
	selectorTerms []scheduling.Requirements
	tolerations   []corev1.Toleration
	ports         []hostPort

	spreads    []*spreadConstraint // DoNotSchedule
	affinities []*affinityTerm     // required pod affinity and anti-affinity

	softSpreads    []*spreadConstraint
	softAffinities []*affinityTerm
	preferredTerms []scheduling.WeightedRequirements
	hasPreferences bool
	memberOf       []*group // match groups whose selector selects this pod
	blockedBy      []*group // owner groups whose anti-affinity selects this pod
	pinKeys        []string // topology keys (not hostname) whose domain must be known once placed
	constrained    bool     // has topology or affinity constraints
	seed           bool     // needs a host without pods like it (hostname anti-affinity)
	untracked      bool     // requests a resource the solve's dimensions leave out
	invalid        error
	// tries are the attempts under the solve's preference policy, listed once by prepare for pending pods
	// (the packing orders share them, read-only).
	tries []attempt
	// settleFirst is set when the pod joins the group of a hard spread of another pending pod: it is tried
	// first with the spreads already placed kept settled (settle.go).
	settleFirst bool
	// hostedSpread is set when a hard spread of the pod has a host domain: the pod is tried there first.
	hostedSpread bool
	// countedByHost is set when the host domain of a hard spread of the pod is also the host of a group the
	// pod joins: the pod is placed after every other pending pod (spread_hosts.go).
	countedByHost bool
	// signature is swapSignature(pod), listed by prepare for pending pods with tries ("" when not listed).
	signature string
	// earlier is one more than the index in prepared.nodes of the pod's place in Input.EarlierPlaces (0
	// for none).
	earlier int
}

// hostPort is a host port a container binds.
type hostPort struct {
	protocol corev1.Protocol
	ip       string
	port     int32
}

func (a hostPort) conflicts(b hostPort) bool {
	if a.port != b.port || a.protocol != b.protocol {
		return false
	}
	wildcard := func(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }
	return a.ip == b.ip || wildcard(a.ip) || wildcard(b.ip)
}

func (a hostPort) String() string {
	return fmt.Sprintf("%s/%d", a.protocol, a.port)
}

func podHostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, p := range c.Ports {
				if p.HostPort <= 0 {
					continue
				}
				proto := p.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				out = append(out, hostPort{protocol: proto, ip: p.HostIP, port: p.HostPort})
			}
		}
	}
	return out
}

// podRequests is scheduling.PodRequests as a vector. A pod of one container, without init containers or
// overhead, requests what its container does plus one pod; that common case is read without building the
// list.
func podRequests(pod *corev1.Pod, dims *resourceDims) vec {
	v, _ := podRequestsInto(make(vec, len(dims.names)), pod, dims)
	return v
}

// podRequestsInto is podRequests written into v, which has a zero per dimension; untracked reports
// whether the pod requests a resource dims does not track.
func podRequestsInto(v vec, pod *corev1.Pod, dims *resourceDims) (out vec, untracked bool) {
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) > 0 || len(pod.Spec.Overhead) > 0 {
		return dims.vecInto(v, scheduling.PodRequests(pod))
	}
	_, untracked = dims.vecInto(v, pod.Spec.Containers[0].Resources.Requests)
	v[dims.index[corev1.ResourcePods]] = 1
	return v, untracked
}

// podArena hands out podInfos and request vectors carved from chunks: a solve parses every pod of the
// cluster, and one allocation per chunk costs much less than two per pod. A podInfo keeps its chunk alive,
// which is no loss: a preparation's pods live as long as one another.
type podArena struct {
	infos []podInfo
	vecs  vec
}

const arenaChunk = 256

func (a *podArena) info() *podInfo {
	if len(a.infos) == 0 {
		a.infos = make([]podInfo, arenaChunk)
	}
	p := &a.infos[0]
	a.infos = a.infos[1:]
	return p
}

// vec is a zero vector of n dimensions.
func (a *podArena) vec(n int) vec {
	if len(a.vecs) < n {
		a.vecs = make(vec, arenaChunk*n)
	}
	v := a.vecs[:n:n]
	a.vecs = a.vecs[n:]
	return v
}

// newPodInfo parses a pending pod. Topology groups are registered in topo; memberOf and blockedBy are
// filled in later by linkGroups, once every pod has registered its groups.
func newPodInfo(arena *podArena, pod *corev1.Pod, index int, dims *resourceDims, topo *topology, volumes *volumeIndex) *podInfo {
	p := newBoundPodInfo(arena, pod, index, dims, topo)
	p.readSpreadScope()
	terms := p.selectorTerms
	if volumeReqs, err := volumes.requirements(pod); err != nil {
		p.invalid = err
	} else if len(volumeReqs) > 0 {
		terms = slices.Clone(terms)
		for i := range terms {
			terms[i] = terms[i].Intersection(volumeReqs)
		}
	}
	p.terms = terms
	var err error
	if p.preferredTerms, err = scheduling.PodPreferredRequirements(pod); err != nil {
		p.invalid = err
	}
	p.hasPreferences = len(p.softSpreads)+len(p.softAffinities)+len(p.preferredTerms) > 0
	return p
}

// readSpreadScope reads what decides the nodes the pod's spreads count: its tolerations and its node
// selector and required node affinity (selectorTerms); an invalid node selector or affinity marks the pod
// invalid and counts every node.
func (p *podInfo) readSpreadScope() {
	p.tolerations = p.pod.Spec.Tolerations
	terms, err := scheduling.PodRequirements(p.pod)
	if err != nil {
		p.invalid = err
		terms = []scheduling.Requirements{{}}
	}
	p.selectorTerms = terms
}

// newBoundPodInfo parses what a pod already on a node or in-flight claim brings to a solve: its requests
// and host ports, which its target loses, and its topology spreads and pod (anti-)affinities, which other
// pods are counted by. Its node selector, affinity to nodes, tolerations and preferred node terms only
// matter to placing it, which a solve never does, so they are not read.
func newBoundPodInfo(arena *podArena, pod *corev1.Pod, index int, dims *resourceDims, topo *topology) *podInfo {
	p := arena.info()
	*p = podInfo{pod: pod, ref: PodRef{Namespace: pod.Namespace, Name: pod.Name}, index: index}
	p.requests, p.untracked = podRequestsInto(arena.vec(len(dims.names)), pod, dims)
	p.ports = podHostPorts(pod)
	for _, c := range pod.Spec.TopologySpreadConstraints {
		s := topo.spread(pod, c)
		if s.soft {
			p.softSpreads = append(p.softSpreads, s)
		} else {
			p.spreads = append(p.spreads, s)
		}
	}
	if a := pod.Spec.Affinity; a != nil {
		p.addAffinity(topo, a.PodAffinity, false)
		if a.PodAntiAffinity != nil {
			for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				p.affinities = append(p.affinities, topo.affinity(pod, &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i], 0, true))
			}
			for i := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				w := &a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i]
				p.softAffinities = append(p.softAffinities, topo.affinity(pod, &w.PodAffinityTerm, max(w.Weight, 1), true))
			}
		}
	}
	for _, a := range p.affinities {
		p.seed = p.seed || (a.anti && a.group.key == v1.LabelHostname)
	}
	p.constrained = len(p.spreads)+len(p.affinities)+len(p.softSpreads)+len(p.softAffinities) > 0
	return p
}

func (p *podInfo) addAffinity(topo *topology, pa *corev1.PodAffinity, anti bool) {
	if pa == nil {
		return
	}
	for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
		p.affinities = append(p.affinities, topo.affinity(p.pod, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i], 0, anti))
	}
	for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
		w := &pa.PreferredDuringSchedulingIgnoredDuringExecution[i]
		p.softAffinities = append(p.softAffinities, topo.affinity(p.pod, &w.PodAffinityTerm, max(w.Weight, 1), anti))
	}
}

// linkGroups records which groups select the pod and which topology keys it must be pinned on.
func (p *podInfo) linkGroups(topo *topology, ownerGroups map[*group]bool) {
	keys := map[string]bool{}
	for _, g := range topo.groups {
		if !g.matches(p.pod.Namespace, p.pod.Labels) {
			continue
		}
		if ownerGroups[g] {
			p.blockedBy = append(p.blockedBy, g)
		} else {
			p.memberOf = append(p.memberOf, g)
		}
		keys[g.key] = true
	}
	for _, s := range append(slices.Clone(p.spreads), p.softSpreads...) {
		keys[s.group.key] = true
	}
	for _, a := range append(slices.Clone(p.affinities), p.softAffinities...) {
		keys[a.group.key] = true
	}
	delete(keys, v1.LabelHostname)
	for k := range keys {
		p.pinKeys = append(p.pinKeys, k)
	}
	slices.Sort(p.pinKeys)
}

// attempt is one set of constraints to place a pod under: all of its preferences at first, then fewer.
type attempt struct {
	terms            []scheduling.Requirements
	spreads          []*spreadConstraint
	affinities       []*affinityTerm
	preferNoSchedule bool
	relaxed          int // how many preferences were dropped
	// settle keeps the hard spreads already placed within their skew (settle.go).
	settle bool
	// avoid, with settle, keeps the pod out of every domain where such a spread is placed (settle.go).
	avoid bool
	// host keeps the pod in the host domain of each of its hard spreads that has one (spread_hosts.go).
	host bool
}

// attempts lists the constraint sets to try, strictest first. Preferences are dropped one at a time:
// ScheduleAnyway spreads, then preferred pod (anti-)affinity and preferred node affinity terms from the
// lightest weight up, then PreferNoSchedule taints.
func (p *podInfo) attempts(policy PreferencePolicy) []attempt {
	base := attempt{terms: p.terms, spreads: p.spreads, affinities: p.affinities}
	if policy == PreferenceIgnore || !p.hasPreferences {
		if policy == PreferenceIgnore {
			return []attempt{base}
		}
		strict := base
		strict.preferNoSchedule = true
		return []attempt{strict, base}
	}
	type preference struct {
		weight  int32
		kind    int // order among equal weights
		spread  *spreadConstraint
		term    *affinityTerm
		reqs    scheduling.Requirements
		ordinal int
	}
	var prefs []preference
	for i, s := range p.softSpreads {
		prefs = append(prefs, preference{weight: -1, spread: s, ordinal: i})
	}
	for i, a := range p.softAffinities {
		kind := 1
		if a.anti {
			kind = 2
		}
		prefs = append(prefs, preference{weight: a.weight, kind: kind, term: a, ordinal: i})
	}
	for i, w := range p.preferredTerms {
		prefs = append(prefs, preference{weight: w.Weight, kind: 3, reqs: w.Requirements, ordinal: i})
	}
	slices.SortStableFunc(prefs, func(a, b preference) int {
		if a.weight != b.weight {
			return int(a.weight - b.weight)
		}
		if a.kind != b.kind {
			return a.kind - b.kind
		}
		return a.ordinal - b.ordinal
	})
	var out []attempt
	for dropped := 0; dropped <= len(prefs); dropped++ {
		a := attempt{spreads: slices.Clip(p.spreads), affinities: slices.Clip(p.affinities), preferNoSchedule: true, relaxed: dropped}
		var extra scheduling.Requirements
		for _, pref := range prefs[dropped:] {
			switch {
			case pref.spread != nil:
				a.spreads = append(a.spreads, pref.spread)
			case pref.term != nil:
				a.affinities = append(a.affinities, pref.term)
			default:
				if extra == nil {
					extra = scheduling.Requirements{}
				}
				extra = extra.Intersection(pref.reqs)
			}
		}
		a.terms = p.terms
		if extra != nil {
			a.terms = make([]scheduling.Requirements, len(p.terms))
			for i, t := range p.terms {
				a.terms[i] = t.Intersection(extra)
			}
		}
		out = append(out, a)
	}
	last := out[len(out)-1]
	last.preferNoSchedule = false
	last.relaxed++
	return append(out, last)
}
