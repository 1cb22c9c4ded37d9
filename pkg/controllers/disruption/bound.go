package disruption

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// feasiblePrefix returns the length of the longest prefix of cands whose reschedulable pods could fit,
// counting cpu and memory as fluids, into the free allocatable of every node outside the prefix plus one
// replacement of the largest launchable type. Fitting so is necessary for a prefix to be removable with at
// most one new node, so multi-node consolidation never simulates a longer one. When in-flight capacity is
// not known yet the bound is not computed and every prefix stays possible.
func feasiblePrefix(v *View, cands []*Candidate, needs []demand) int {
	var freeCPU, freeMem int64
	for _, n := range v.Snapshot.Nodes {
		if n.MarkedForDeletion {
			continue
		}
		freeCPU += free(n.Allocatable, n.Requested, corev1.ResourceCPU)
		freeMem += free(n.Allocatable, n.Requested, corev1.ResourceMemory)
	}
	for _, c := range v.Snapshot.InFlight {
		if c.MarkedForDeletion {
			continue
		}
		if len(c.Allocatable) == 0 {
			return len(cands)
		}
		freeCPU += milli(c.Allocatable, corev1.ResourceCPU)
		freeMem += milli(c.Allocatable, corev1.ResourceMemory)
	}
	var maxCPU, maxMem int64
	for _, pool := range v.LaunchablePools {
		for _, it := range v.InstanceTypes[pool.Name] {
			alloc := it.Allocatable()
			maxCPU, maxMem = max(maxCPU, milli(alloc, corev1.ResourceCPU)), max(maxMem, milli(alloc, corev1.ResourceMemory))
		}
	}
	freeCPU, freeMem = freeCPU+maxCPU, freeMem+maxMem
	for k, c := range cands {
		freeCPU -= free(c.Allocatable, c.Requested, corev1.ResourceCPU) + needs[k].cpu
		freeMem -= free(c.Allocatable, c.Requested, corev1.ResourceMemory) + needs[k].mem
		if freeCPU < 0 || freeMem < 0 {
			return k
		}
	}
	return len(cands)
}

// free is allocatable minus requested of the resource, in milli-units, never negative.
func free(alloc, requested corev1.ResourceList, name corev1.ResourceName) int64 {
	return max(milli(alloc, name)-milli(requested, name), 0)
}

func milli(list corev1.ResourceList, name corev1.ResourceName) int64 {
	q, ok := list[name]
	if !ok {
		return 0
	}
	return q.MilliValue()
}

// demand is the cpu and memory (milli-units) a candidate's reschedulable pods request.
type demand struct{ cpu, mem int64 }

// demands returns each candidate's demand and, when every reschedulable pod requests the same cpu and
// memory, that request (else ok is false).
func demands(cands []*Candidate) (needs []demand, each demand, ok bool) {
	needs = make([]demand, len(cands))
	ok = true
	first := true
	for i, c := range cands {
		for _, p := range c.ReschedulablePods {
			d := podDemand(p)
			needs[i].cpu, needs[i].mem = needs[i].cpu+d.cpu, needs[i].mem+d.mem
			if first {
				each, first = d, false
			}
			ok = ok && d == each
		}
	}
	return needs, each, ok && !first
}

// podDemand is the cpu and memory scheduling.PodRequests gives the pod, read directly from the container
// for a pod of one container without init containers or overhead.
func podDemand(p *corev1.Pod) demand {
	r := corev1.ResourceList(nil)
	if len(p.Spec.Containers) == 1 && len(p.Spec.InitContainers) == 0 && len(p.Spec.Overhead) == 0 {
		r = p.Spec.Containers[0].Resources.Requests
	} else {
		r = scheduling.PodRequests(p)
	}
	return demand{milli(r, corev1.ResourceCPU), milli(r, corev1.ResourceMemory)}
}

// slotPrefix returns the length of the longest prefix of cands that could be removed when every
// reschedulable pod of cands requests each's cpu and memory: each node outside the prefix, and one
// replacement of the largest launchable type, then holds a whole number of such pods, which is tighter
// than feasiblePrefix's fluid count.
func slotPrefix(v *View, cands []*Candidate, each demand) int {
	cpu, mem := each.cpu, each.mem
	if cpu <= 0 && mem <= 0 {
		return len(cands)
	}
	// slots is how many of the pods fit in the free cpu and memory.
	slots := func(freeCPU, freeMem int64) int64 {
		n := int64(math.MaxInt64)
		if cpu > 0 {
			n = freeCPU / cpu
		}
		if mem > 0 {
			n = min(n, freeMem/mem)
		}
		return n
	}
	var room int64
	for _, n := range v.Snapshot.Nodes {
		if !n.MarkedForDeletion {
			room += slots(free(n.Allocatable, n.Requested, corev1.ResourceCPU), free(n.Allocatable, n.Requested, corev1.ResourceMemory))
		}
	}
	for _, c := range v.Snapshot.InFlight {
		if c.MarkedForDeletion {
			continue
		}
		if len(c.Allocatable) == 0 {
			return len(cands)
		}
		room += slots(milli(c.Allocatable, corev1.ResourceCPU), milli(c.Allocatable, corev1.ResourceMemory))
	}
	var replacement int64
	for _, pool := range v.LaunchablePools {
		for _, it := range v.InstanceTypes[pool.Name] {
			alloc := it.Allocatable()
			replacement = max(replacement, slots(milli(alloc, corev1.ResourceCPU), milli(alloc, corev1.ResourceMemory)))
		}
	}
	room += replacement
	for k, c := range cands {
		room -= slots(free(c.Allocatable, c.Requested, corev1.ResourceCPU), free(c.Allocatable, c.Requested, corev1.ResourceMemory)) + int64(len(c.ReschedulablePods))
		if room < 0 {
			return k
		}
	}
	return len(cands)
}
