package disruption

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// feasiblePrefix returns the length of the longest prefix of cands whose reschedulable pods could fit,
// counting cpu and memory as fluids, into the free allocatable of every node outside the prefix plus one
// replacement of the largest launchable type. Fitting so is necessary for a prefix to be removable with at
// most one new node, so multi-node consolidation never simulates a longer one. When in-flight capacity is
// not known yet the bound is not computed and every prefix stays possible.
func feasiblePrefix(v *View, cands []*Candidate) int {
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
		need := corev1.ResourceList{}
		for _, p := range c.ReschedulablePods {
			scheduling.AddResources(need, scheduling.PodRequests(p))
		}
		freeCPU -= free(c.Allocatable, c.Requested, corev1.ResourceCPU) + milli(need, corev1.ResourceCPU)
		freeMem -= free(c.Allocatable, c.Requested, corev1.ResourceMemory) + milli(need, corev1.ResourceMemory)
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
