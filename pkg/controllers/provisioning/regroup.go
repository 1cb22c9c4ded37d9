package provisioning

import (
	"context"
	"math"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// Regrouping. A pass keeps every pending pod where an earlier pass nominated it and plans only the new
// pods around them. When pods arrive over several batches (a large apply outlasts BATCH_MAX_DURATION, a
// controller creates replicas at its own rate) that costs: the earlier claims were sized for the earlier
// pods, so a later group that needs hosts of its own (hostname anti-affinity, hostname spreads) finds no
// room on them and opens a small claim per pod. So when the pass must open NodeClaims, it is solved a second
// time with every pod nominated but not bound yet planned again with the new ones: the pods of NodeClaims
// still in flight, and the pods waiting for the kube-scheduler on a Node, the capacity of those claims and
// Nodes counted as it is. Each of those pods is put back where it was unless a pod that needs a host of its
// own takes its room (solver.Input.EarlierPlaces): packing them afresh moved nearly every one of them for
// the same price (BenchmarkRegroupAfterSplitBatch), and each move is a nomination and a hint changed while
// the kube-scheduler may be placing the pod. The second plan is kept only when it saves a clear share of
// what the machines it may reshape and the pass's new claims cost together: the claims in flight, the Nodes
// with pods waiting on them, and the kept plan's claims (a share set when a regrouped plan still moved most
// of the pods it re-planned; whether a lower one pays now was not measured). Nominations never move back
// and forth: each regrouping lowers the price of what its pass opens.
//
// A pod moved off a Node has its hint cleared (or moved) while the pods planned into its place get theirs,
// and the kube-scheduler counts the hinted pods against the Node, so the moved pod finds no room there. A
// pod waiting on a Node keeps its nomination longer while its hint is in place (state.HintedWindowFactor);
// regrouping is how such pods make room for a later group, when that pays (docs/performance.md,
// seventeenth session).

// regroupSaving is the share of the price of the machines regrouping may reshape (reshapedPrice) and the kept
// plan's new claims that a regrouped plan must save to be kept.
const regroupSaving = 0.02

// regrouped is an input with the nominated pods that are not bound yet pending again, and where each was.
type regrouped struct {
	in solver.Input
	// was gives each moved pod's earlier place.
	was map[solver.PodRef]place
}

// regroup returns the input with the pods nominated to in-flight NodeClaims and to Nodes, but not bound,
// made pending again (pendingInput) with their places as earlier places, or false when there are none.
func regroup(in solver.Input) (regrouped, bool) {
	was, earlier := map[solver.PodRef]place{}, map[solver.PodRef]string{}
	for pod, at := range pinnedPods(in) {
		ref := solver.PodRef{Namespace: pod.Namespace, Name: pod.Name}
		was[ref], earlier[ref] = at, at.name
	}
	if len(was) == 0 {
		return regrouped{}, false
	}
	out := pendingInput(in)
	out.Pods = sortPods(out.Pods)
	out.EarlierPlaces = earlier
	return regrouped{in: out, was: was}, true
}

// regroupWins reports whether the regrouped plan is worth moving nominations for: it places every pod the
// kept plan places and saves at least regroupSaving of what the kept plan pays for, the machines whose pods
// may move (reshaped, $/h, see reshapedPrice) included.
func regroupWins(kept, regrouped *solver.Plan, reshaped float64) bool {
	return len(regrouped.Unschedulable) <= len(kept.Unschedulable) &&
		kept.PricePerHour-regrouped.PricePerHour >= regroupSaving*(reshaped+kept.PricePerHour)
}

// reshapedPrice is the hourly price of the machines whose pods regrouping may move: the input's in-flight
// NodeClaims, and its Nodes with pods nominated to them and not bound yet. A launched claim or a Node counts
// at its offering (see cloudprovider.InstanceType.PriceAt), a claim not launched yet at the cheapest
// available offering its requirements allow, the least it will cost. Counting such a claim as nothing made
// the threshold a few cents when a pass came seconds after the one that created its claims (one 1,000-pod
// run moved 483 nominations to save $0.15/h), and so did leaving out the Nodes once regrouping moved the
// pods waiting on them: a pass whose claims had all become Nodes moved 61 waiting pods, most of them hinted,
// to save $0.03/h.
func reshapedPrice(in solver.Input) float64 {
	total := 0.0
	for _, c := range in.InFlight {
		its := in.InstanceTypes[c.NodeClaim.Labels[v1.NodePoolLabelKey]]
		if c.NodeClaim.Status.ProviderID != "" {
			total += its.Named(c.NodeClaim.Labels[v1.LabelInstanceType]).LaunchedPrice(c.NodeClaim)
			continue
		}
		total += leastPrice(its, c.NodeClaim)
	}
	for _, n := range in.Nodes {
		if slices.ContainsFunc(n.Pods, awaitsBinding) {
			labels := n.Node.Labels
			total += in.InstanceTypes[labels[v1.NodePoolLabelKey]].Named(labels[v1.LabelInstanceType]).PriceAt(labels)
		}
	}
	return total
}

// leastPrice is the price of the cheapest available offering a NodeClaim not launched yet may launch on; 0
// when its requirements do not parse or allow none.
func leastPrice(its cloudprovider.InstanceTypes, claim *v1.NodeClaim) float64 {
	reqs, err := scheduling.FromNodePoolRequirements(claim.Spec.Requirements)
	if err != nil {
		return 0
	}
	least := math.Inf(1)
	for _, it := range its.Compatible(reqs) {
		if o, ok := it.Offerings.CheapestCompatible(reqs); ok {
			least = min(least, o.Price)
		}
	}
	if math.IsInf(least, 1) {
		return 0
	}
	return least
}

// solve plans the pass, regrouping when that pays (see regroup). It returns the input the plan is for and,
// when regrouped, where each moved pod was.
func (p *Provisioner) solve(ctx context.Context, in solver.Input) (solver.Input, *solver.Plan, map[solver.PodRef]place, error) {
	plan, err := solver.Solve(ctx, in, p.deps.SolverOptions)
	if err != nil || len(plan.NodeClaims) == 0 {
		return in, plan, nil, err
	}
	alt, ok := regroup(in)
	if !ok {
		return in, plan, nil, nil
	}
	altPlan, err := solver.Solve(ctx, alt.in, p.deps.SolverOptions)
	if err != nil || !regroupWins(plan, altPlan, reshapedPrice(in)) {
		return in, plan, nil, nil // the kept plan stands on its own
	}
	log.FromContext(ctx).Info("regrouped nominated pods", "movable", len(alt.was), "nodeClaims", len(altPlan.NodeClaims),
		"pricePerHour", altPlan.PricePerHour, "keptNodeClaims", len(plan.NodeClaims), "keptPricePerHour", plan.PricePerHour)
	return alt.in, altPlan, alt.was, nil
}
