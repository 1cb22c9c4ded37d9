package static

import (
	"cmp"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
)

// count is what a static pool has: claims not being deleted (active), and among them those a disruption
// command is replacing (their replacement is, or will be, among the active ones).
type count struct {
	active, disrupting []*v1.NodeClaim
	// all counts every claim of the pool, deleting ones too (they hold capacity until gone: limits).
	all int
}

func countClaims(claims []v1.NodeClaim) count {
	var c count
	for i := range claims {
		claim := &claims[i]
		c.all++
		if claim.DeletionTimestamp != nil {
			continue
		}
		c.active = append(c.active, claim)
		if meta.IsStatusConditionTrue(claim.Status.Conditions, v1.ConditionTypeDisruptionReason) {
			c.disrupting = append(c.disrupting, claim)
		}
	}
	return c
}

// toLaunch is how many claims to create: up to the replicas (a claim being replaced counts, as its
// replacement is on its way), within limits.nodes.
func toLaunch(pool *v1.NodePool, c count) int {
	want := int(*pool.Spec.Replicas) - len(c.active)
	if limit, ok := pool.Spec.Limits[v1.ResourceNodes]; ok {
		want = min(want, int(limit.Value())-c.all)
	}
	return max(want, 0)
}

// toRemove picks the claims to delete when the pool has more than its replicas, not counting those being
// replaced: first claims that never launched, then the cheapest to disrupt (empty ones cost nothing, a
// do-not-disrupt pod makes a node the last choice), ties by name.
func toRemove(pool *v1.NodePool, c count, podsOf func(claim *v1.NodeClaim) []*corev1.Pod) []*v1.NodeClaim {
	excess := len(c.active) - len(c.disrupting) - int(*pool.Spec.Replicas)
	if excess <= 0 {
		return nil
	}
	type scored struct {
		claim    *v1.NodeClaim
		launched bool
		cost     float64
	}
	var cands []scored
	for _, claim := range c.active {
		if slices.Contains(c.disrupting, claim) {
			continue
		}
		s := scored{claim: claim, launched: claim.Status.ProviderID != ""}
		for _, p := range podsOf(claim) {
			if !disruption.Reschedulable(p) {
				continue
			}
			if p.Annotations[v1.DoNotDisruptAnnotationKey] != "" {
				s.cost = math.Inf(1)
				break
			}
			s.cost += disruption.EvictionCost(p)
		}
		cands = append(cands, s)
	}
	slices.SortFunc(cands, func(a, b scored) int {
		if a.launched != b.launched {
			if !a.launched {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(a.claim.Name, b.claim.Name))
	})
	out := make([]*v1.NodeClaim, 0, excess)
	for _, s := range cands[:min(excess, len(cands))] {
		out = append(out, s.claim)
	}
	return out
}
