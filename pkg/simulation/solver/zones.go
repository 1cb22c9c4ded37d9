package solver

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// Effective zone values that are not a zone name, as upstream Karpenter reports them.
const (
	// ZoneFlexible is a pod that more than one zone admits, or that nothing ties to a zone.
	ZoneFlexible = "flexible"
	// ZoneNone is a pod that no zone admits.
	ZoneNone = "none"
)

// EffectiveZones returns, for each of in.Pods (same order), the zone its constraints leave it before any
// placement: the zone name when exactly one zone is admitted by its required zone (nodeSelector and
// required node affinity), the zone of its volumes and the zones its zonal topology spreads and pod
// (anti-)affinities allow given the pods already placed; ZoneFlexible when several are; ZoneNone when none
// is. The topology terms are those of the pod's first attempt under opts' preference policy (so preferred
// ones count unless preferences are ignored), not the ones that select it. Only the pods with zonal
// topology terms are prepared as Solve prepares them (with the nodes, claims and pools); the others are
// just parsed.
func EffectiveZones(in Input, opts Options) []string {
	opts = opts.withDefaults()
	out := make([]string, len(in.Pods))
	volumes := newVolumeIndex(in.Volumes)
	z := newZoneTopology(in, opts)
	for i, pod := range in.Pods {
		allowed, constrained, satisfiable := z.allowed(i)
		if !satisfiable {
			out[i] = ZoneNone
			continue
		}
		terms, err := scheduling.PodRequirements(pod)
		if err != nil {
			out[i] = ZoneNone // an invalid selector admits no node
			continue
		}
		// A volume that can't be resolved leaves the pod unschedulable for another reason than its zone.
		volumeReqs, _ := volumes.requirements(pod)
		var topo *scheduling.Requirement
		if constrained {
			r := scheduling.MustRequirement(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, allowed...)
			topo = &r
		}
		out[i] = effectiveZone(terms, volumeZone(volumeReqs), topo)
	}
	return out
}

// volumeZone is the zone requirement of the pod's volumes when they list zones, else nil.
func volumeZone(reqs scheduling.Requirements) *scheduling.Requirement {
	if !reqs.Has(v1.LabelTopologyZone) {
		return nil
	}
	r := reqs.Get(v1.LabelTopologyZone)
	if !r.IsFinite() {
		return nil
	}
	return &r
}

// effectiveZone intersects the three zone sources. The candidates are listed by the first source that lists
// zones (the pod's own, then its volumes', then its topology's); with none, the pod is flexible. A pod with
// several required node affinity terms admits a zone any of them admits.
func effectiveZone(terms []scheduling.Requirements, volume, topo *scheduling.Requirement) string {
	var candidates []string
	listed := true
	for _, t := range terms {
		r := t.Get(v1.LabelTopologyZone)
		if !t.Has(v1.LabelTopologyZone) || !r.IsFinite() {
			listed = false
			break
		}
		candidates = append(candidates, r.Values()...)
	}
	switch {
	case listed:
		slices.Sort(candidates)
		candidates = slices.Compact(candidates)
	case volume != nil:
		candidates = volume.Values()
	case topo != nil:
		candidates = topo.Values()
	default:
		return ZoneFlexible
	}
	found := ""
	for _, zone := range candidates {
		if !anyTermAllows(terms, v1.LabelTopologyZone, zone) || (volume != nil && !volume.Has(zone)) || (topo != nil && !topo.Has(zone)) {
			continue
		}
		if found != "" {
			return ZoneFlexible
		}
		found = zone
	}
	if found == "" {
		return ZoneNone
	}
	return found
}

// hasZonalTopology reports whether the pod spreads or has pod (anti-)affinity terms over zones.
func hasZonalTopology(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.TopologyKey == v1.LabelTopologyZone {
			return true
		}
	}
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	if pa := a.PodAffinity; pa != nil {
		terms = append(terms, pa.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if paa := a.PodAntiAffinity; paa != nil {
		terms = append(terms, paa.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range paa.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	return slices.ContainsFunc(terms, func(t corev1.PodAffinityTerm) bool { return t.TopologyKey == v1.LabelTopologyZone })
}

// zoneTopology is the input's pods with zonal topology terms prepared as Solve prepares them, with the
// counts of the pods already placed. Other pending pods change no count before placement, so they are
// left out.
type zoneTopology struct {
	prep  *prepared
	r     *run
	of    map[int]*podInfo // by index in the input's pods
	zones []string         // every zone a NodePool may launch in or a node is in
}

func newZoneTopology(in Input, opts Options) *zoneTopology {
	z := &zoneTopology{of: map[int]*podInfo{}}
	var index []int
	zonal := in
	zonal.Pods = nil
	for i, pod := range in.Pods {
		if hasZonalTopology(pod) {
			zonal.Pods = append(zonal.Pods, pod)
			index = append(index, i)
		}
	}
	if len(index) == 0 {
		return z
	}
	z.prep = prepare(zonal, opts)
	z.r = newRun(z.prep)
	for j, i := range index {
		z.of[i] = z.prep.pods[j]
	}
	for _, pool := range z.prep.pools {
		z.zones = append(z.zones, pool.domainValues(v1.LabelTopologyZone, nil)...)
	}
	for _, n := range z.prep.nodes {
		if zone, ok := n.labels[v1.LabelTopologyZone]; ok {
			z.zones = append(z.zones, zone)
		}
	}
	slices.Sort(z.zones)
	z.zones = slices.Compact(z.zones)
	return z
}

// allowed returns the zones that every zonal spread and pod (anti-)affinity of the input's pod i allows,
// and whether it has any; satisfiable is false when one of them, or all of them together, allow no zone.
// A spread considers the zones it counts (its universe), an affinity every zone. Anti-affinities of other
// pods that select this one are not considered, as upstream leaves them out too.
func (z *zoneTopology) allowed(i int) (allowed []string, constrained, satisfiable bool) {
	p, ok := z.of[i]
	if !ok || len(p.tries) == 0 {
		return nil, false, true
	}
	att := p.tries[0]
	own := *p
	own.blockedBy = nil
	narrow := func(candidates []string, check attempt) bool {
		var ok []string
		for _, d := range candidates {
			if fits, _ := z.r.allows(&own, &check, nil, v1.LabelTopologyZone, d, false); fits && (!constrained || slices.Contains(allowed, d)) {
				ok = append(ok, d)
			}
		}
		if len(ok) == 0 {
			return false
		}
		allowed, constrained = ok, true
		return true
	}
	for _, s := range att.spreads {
		if s.group.key == v1.LabelTopologyZone && !narrow(s.universe, attempt{spreads: []*spreadConstraint{s}}) {
			return nil, true, false
		}
	}
	for _, a := range att.affinities {
		if a.group.key == v1.LabelTopologyZone && !narrow(z.zones, attempt{affinities: []*affinityTerm{a}}) {
			return nil, true, false
		}
	}
	return allowed, constrained, true
}
