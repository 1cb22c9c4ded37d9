package solver

import (
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// daemonInfo is a DaemonSet's pod template parsed once.
type daemonInfo struct {
	pod      *corev1.Pod
	terms    []scheduling.Requirements // nodeSelector ∧ each required node affinity term (ORed)
	requests vec
	ports    []hostPort
}

// newDaemonInfos parses one pod per DaemonSet, from its template. DaemonSets whose node affinity can't be
// parsed are left out: no node would run them.
func newDaemonInfos(daemonSets []*appsv1.DaemonSet, dims *resourceDims) []*daemonInfo {
	var out []*daemonInfo
	for _, ds := range daemonSets {
		pod := &corev1.Pod{ObjectMeta: ds.Spec.Template.ObjectMeta, Spec: ds.Spec.Template.Spec}
		terms, err := scheduling.PodRequirements(pod)
		if err != nil {
			continue
		}
		out = append(out, &daemonInfo{pod: pod, terms: terms, requests: dims.vec(scheduling.PodRequests(pod)), ports: podHostPorts(pod)})
	}
	return out
}

// daemonGroup is what the DaemonSets a set of instance types admit take on every node of those types.
type daemonGroup struct {
	overhead vec
	ports    []hostPort
}

// applyDaemons decides, per instance type of the pool, which DaemonSets would run on a node of that type
// (they tolerate the pool's taints and startup taints, and one of their node affinity terms is compatible
// with the pool's requirements and intersects the type's labels, as Karpenter decides it), and takes
// their requests off the type's alloc and records their host ports. Types that admit the same DaemonSets
// share one group, so the work is one intersection per DaemonSet and type, once per solve; placement
// never looks at DaemonSets again. It reports whether any type's DaemonSets hold host ports.
func (p *poolInfo) applyDaemons(types []*typeOption, daemons []*daemonInfo, compat scheduling.CompatibilityOptions) bool {
	type candidate struct {
		d     *daemonInfo
		terms []scheduling.Requirements // the terms the pool allows
	}
	taints := append(slices.Clone(p.taints), p.np.Spec.Template.Spec.StartupTaints...)
	var candidates []candidate
	for _, d := range daemons {
		if scheduling.Tolerates(d.pod.Spec.Tolerations, taints, false) != nil {
			continue
		}
		var terms []scheduling.Requirements
		for _, t := range d.terms {
			if p.reqs.Compatible(t, compat) == nil {
				terms = append(terms, t)
			}
		}
		if len(terms) > 0 {
			candidates = append(candidates, candidate{d: d, terms: terms})
		}
	}
	if len(candidates) == 0 {
		return false
	}
	groups := map[string]*daemonGroup{}
	hasPorts := false
	var key strings.Builder
	for _, t := range types {
		key.Reset()
		var admitted []*daemonInfo
		for i, c := range candidates {
			if slices.ContainsFunc(c.terms, func(term scheduling.Requirements) bool { return t.it.Requirements.Intersects(term) == nil }) {
				admitted = append(admitted, c.d)
				key.WriteString(strconv.Itoa(i) + ",")
			}
		}
		g, ok := groups[key.String()]
		if !ok {
			g = &daemonGroup{overhead: make(vec, len(t.alloc))}
			for _, d := range admitted {
				g.overhead.addInPlace(d.requests)
				g.ports = append(g.ports, d.ports...)
			}
			groups[key.String()] = g
		}
		t.daemons, t.daemonPorts = g.overhead, g.ports
		hasPorts = hasPorts || len(g.ports) > 0
		for i := range t.alloc {
			// Negative when the DaemonSets alone don't fit: then no pod fits either.
			t.alloc[i] -= g.overhead[i]
		}
	}
	return hasPorts
}

// withoutPortConflicts keeps the types on which no DaemonSet holds one of the host ports.
func withoutPortConflicts(types []pricedType, ports []hostPort) []pricedType {
	out := make([]pricedType, 0, len(types))
	for _, t := range types {
		if _, conflict := portsConflict(t.daemonPorts, ports); !conflict {
			out = append(out, t)
		}
	}
	return out
}

// minDaemons is the smallest DaemonSet overhead, per resource, among the types: what a NodeClaim listing
// them requests for its DaemonSets whichever type is launched (Karpenter's addDaemonRequests).
func minDaemons(types []pricedType, n int) vec {
	out := make(vec, n)
	for i, t := range types {
		for d := range out {
			if i == 0 || t.daemons[d] < out[d] {
				out[d] = t.daemons[d]
			}
		}
	}
	return out
}
