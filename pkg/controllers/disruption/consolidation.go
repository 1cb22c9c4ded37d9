package disruption

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// MinInstanceTypesForSpotToSpot is how many cheaper instance types a single spot node's spot replacement
// must be able to choose from (upstream's rule): fewer would chase the cheapest, most interrupted pools.
const MinInstanceTypesForSpotToSpot = 15

// consolidation holds what single- and multi-node consolidation share.
type consolidation struct {
	// SpotToSpot enables replacing spot nodes with cheaper spot nodes (the SpotToSpotConsolidation gate).
	SpotToSpot bool
	// SolverOptions are the provisioner's, so simulations place pods as provisioning would.
	SolverOptions solver.Options
}

func (consolidation) Reason() v1.DisruptionReason { return v1.DisruptionReasonUnderutilized }
func (consolidation) Class() Class                { return Graceful }
func (consolidation) Validates() bool             { return true }

// ShouldDisrupt takes non-empty candidates of pools that consolidate underutilized nodes, whose price is
// known and whose Consolidatable condition is True. The messages are upstream's.
func (consolidation) ShouldDisrupt(c *Candidate) (bool, string) {
	switch {
	case c.NodePool.Spec.Replicas != nil:
		return false, ""
	case c.InstanceType == nil:
		return false, fmt.Sprintf("Instance Type %q not found", c.Labels[v1.LabelInstanceType])
	case c.CapacityType == "":
		return false, fmt.Sprintf("Node does not have label %q", v1.CapacityTypeLabelKey)
	case c.Zone == "":
		return false, fmt.Sprintf("Node does not have label %q", v1.LabelTopologyZone)
	case c.NodePool.Spec.Disruption.ConsolidateAfter.IsNever():
		return false, fmt.Sprintf("NodePool %q has consolidation disabled", c.NodePool.Name)
	case c.Empty():
		return false, ""
	case c.NodePool.Spec.Disruption.ConsolidationPolicy == v1.ConsolidationPolicyWhenEmpty:
		return false, fmt.Sprintf("NodePool %q has consolidation policy WhenEmpty, but node is not empty", c.NodePool.Name)
	}
	return meta.IsStatusConditionTrue(c.NodeClaim.Status.Conditions, v1.ConditionTypeConsolidatable), ""
}

// simulate asks the solver where the candidates' reschedulable pods would go if the candidates were gone:
// onto the other nodes and in-flight claims first, then onto new claims from the launchable pools. The
// pods the provisioner has yet to place (pending ones, and those of nodes being drained) are placed too,
// as upstream does, so that they keep the room they need: a candidate's pod must not be moved into space
// a pending pod is about to take. The plan is then cut to the candidates' pods (onlyFor): claims holding
// none of them are the provisioner's to launch, and only the candidates' pods must fit.
func simulate(ctx context.Context, v *View, opts solver.Options, candidates []*Candidate) (*solver.Plan, error) {
	gone := make(map[*state.StateNode]bool, len(candidates))
	for _, c := range candidates {
		gone[c.StateNode] = true
	}
	rest := *v.Snapshot
	rest.Nodes = make([]*state.StateNode, 0, len(v.Snapshot.Nodes))
	for _, n := range v.Snapshot.Nodes {
		if !gone[n] {
			rest.Nodes = append(rest.Nodes, n)
		}
	}
	in := solver.Input{
		NodePools: v.LaunchablePools, InstanceTypes: v.InstanceTypes,
		DaemonSets: v.Snapshot.DaemonSets, Volumes: v.Volumes,
	}
	// Nodes already draining stay as capacity for limits but take nothing; their pods are placed with the
	// pending ones.
	var draining []*corev1.Pod
	in.Nodes, in.InFlight, draining = provisioning.ExistingCapacity(&rest)
	others := unplaced(v, &in, draining)
	in.Pods = podsAnd(candidates, others)
	plan, err := solver.Solve(ctx, in, opts)
	if err != nil {
		return nil, fmt.Errorf("simulating the removal of %d nodes, %w", len(candidates), err)
	}
	return onlyFor(plan, candidates, len(others) > 0), nil
}

// podsOf lists the candidates' reschedulable pods.
func podsOf(candidates []*Candidate) []*corev1.Pod {
	return podsAnd(candidates, nil)
}

// podsAnd lists the candidates' reschedulable pods followed by more, in one allocation.
func podsAnd(candidates []*Candidate, more []*corev1.Pod) []*corev1.Pod {
	n := len(more)
	for _, c := range candidates {
		n += len(c.ReschedulablePods)
	}
	pods := make([]*corev1.Pod, 0, n)
	for _, c := range candidates {
		pods = append(pods, c.ReschedulablePods...)
	}
	return append(pods, more...)
}

// unplaced is what the provisioner has yet to place: the pending pods and the draining nodes' pods. A
// pending pod nominated to a node or claim that stays is not among them: the input already holds it there
// (provisioning.ExistingCapacity). The pending list and the state snapshot are separate copies of the
// pods, so they are matched by namespace and name.
func unplaced(v *View, in *solver.Input, draining []*corev1.Pod) []*corev1.Pod {
	if len(v.Pending) == 0 {
		return draining
	}
	held := map[solver.PodRef]bool{}
	hold := func(pods []*corev1.Pod) {
		for _, p := range pods {
			held[solver.PodRef{Namespace: p.Namespace, Name: p.Name}] = true
		}
	}
	for _, n := range in.Nodes {
		hold(n.Pods)
	}
	for _, f := range in.InFlight {
		hold(f.Pods)
	}
	out := slices.Clip(draining)
	for _, p := range v.Pending {
		if !held[solver.PodRef{Namespace: p.Namespace, Name: p.Name}] {
			out = append(out, p)
		}
	}
	return out
}

// onlyFor cuts a plan to the candidates' pods: the new claims holding at least one of them (and their
// price) and the candidates' pods that found no place. A plan with no other pods is already that.
func onlyFor(plan *solver.Plan, candidates []*Candidate, others bool) *solver.Plan {
	if !others {
		return plan
	}
	mine := map[solver.PodRef]bool{}
	for _, p := range podsOf(candidates) {
		mine[solver.PodRef{Namespace: p.Namespace, Name: p.Name}] = true
	}
	out := *plan
	out.NodeClaims, out.Unschedulable, out.PricePerHour = nil, nil, 0
	for _, nc := range plan.NodeClaims {
		if slices.ContainsFunc(nc.Pods, func(r solver.PodRef) bool { return mine[r] }) {
			out.NodeClaims = append(out.NodeClaims, nc)
			out.PricePerHour += nc.PricePerHour
		}
	}
	for _, u := range plan.Unschedulable {
		if mine[u.Pod] {
			out.Unschedulable = append(out.Unschedulable, u)
		}
	}
	return &out
}

// simulator answers simulate for many sets of candidates drawn from the same ones, with the cluster's
// nodes and their pods prepared for the solver once (solver.Base) instead of once per set.
type simulator struct {
	v    *View
	opts solver.Options
	// base holds every node and every candidate's reschedulable pods; nil until prepared, or when the
	// solver can't reuse its preparation, and then each set is simulated from scratch.
	base     *solver.Base
	prepared bool
	// draining are the pods of nodes being drained; others those and the pending pods not held on a node,
	// placed in every set.
	draining, others []*corev1.Pod
}

func newSimulator(v *View, opts solver.Options, candidates []*Candidate) *simulator {
	s := &simulator{v: v, opts: opts}
	s.prepare(candidates)
	return s
}

// prepare builds the Base for sets drawn from the candidates.
func (s *simulator) prepare(candidates []*Candidate) {
	v := s.v
	in := solver.Input{
		NodePools: v.LaunchablePools, InstanceTypes: v.InstanceTypes,
		DaemonSets: v.Snapshot.DaemonSets, Volumes: v.Volumes,
	}
	in.Nodes, in.InFlight, s.draining = provisioning.ExistingCapacity(v.Snapshot)
	s.others = unplaced(v, &in, s.draining)
	in.Pods = podsAnd(candidates, s.others)
	s.prepared = true
	if base := solver.NewBase(in, s.opts); base.Reuses() {
		s.base = base
	}
}

// simulate is simulate(ctx, v, opts, candidates), for candidates among those the simulator was built for.
func (s *simulator) simulate(ctx context.Context, candidates []*Candidate) (*solver.Plan, error) {
	if s.base == nil {
		return simulate(ctx, s.v, s.opts, candidates)
	}
	names := make([]string, len(candidates))
	for i, c := range candidates {
		names[i] = c.Name()
	}
	plan, err := s.base.Solve(ctx, names, podsAnd(candidates, s.others))
	if err != nil {
		return nil, fmt.Errorf("simulating the removal of %d nodes, %w", len(candidates), err)
	}
	return onlyFor(plan, candidates, len(s.others) > 0), nil
}

// evaluate turns a simulation into a command for the candidates, or explains why there is none: every
// pod must fit; with no new claim the candidates are deleted; with exactly one, it must be cheaper than
// the candidates together, keeping only the instance types that are.
func (m consolidation) evaluate(cands []*Candidate, plan *solver.Plan, consolidationType string) (Command, string) {
	cmd := Command{Reason: v1.DisruptionReasonUnderutilized, ConsolidationType: consolidationType}
	total := 0.0
	for _, c := range cands {
		total += c.Price
	}
	if len(plan.Unschedulable) > 0 {
		u := plan.Unschedulable[0]
		reasons := make([]string, len(u.Reasons))
		for i, r := range u.Reasons {
			reasons[i] = r.String()
		}
		return cmd, fmt.Sprintf("pods would not fit: %s: %s", u.Pod, strings.Join(reasons, "; "))
	}
	switch len(plan.NodeClaims) {
	case 0:
		cmd.Candidates, cmd.SavingsPerHour = cands, total
		return cmd, ""
	case 1:
	default:
		return cmd, fmt.Sprintf("Can't remove without creating %d candidates", len(plan.NodeClaims))
	}
	replacement, why := m.cheaper(cands, plan.NodeClaims[0], total)
	if why != "" {
		return cmd, why
	}
	cmd.Candidates, cmd.Replacements = cands, []solver.NodeClaimPlan{replacement}
	cmd.SavingsPerHour = total - replacement.PricePerHour
	return cmd, ""
}

// cheaper narrows the planned replacement to the instance types cheaper than the candidates' total, with
// the spot-to-spot rules, or says why there is no cheaper replacement.
func (m consolidation) cheaper(cands []*Candidate, nc solver.NodeClaimPlan, total float64) (solver.NodeClaimPlan, string) {
	reqs, err := scheduling.FromNodePoolRequirements(nc.Requirements)
	if err != nil {
		return nc, fmt.Sprintf("reading the replacement's requirements, %v", err)
	}
	allSpot := !slices.ContainsFunc(cands, func(c *Candidate) bool { return c.CapacityType != v1.CapacityTypeSpot })
	spotToSpot := allSpot && allows(reqs, v1.CapacityTypeSpot)
	if spotToSpot && !m.SpotToSpot {
		return nc, "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
	}
	if spotToSpot {
		reqs.Add(scheduling.MustRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot))
	}
	var kept cloudprovider.InstanceTypes
	cheapest := 0.0
	for _, it := range cloudprovider.InstanceTypes(nc.InstanceTypes).Compatible(reqs).OrderByPrice(reqs) {
		p := it.Offerings.Available().Compatible(reqs).CheapestPrice()
		if p < total {
			kept = append(kept, it)
		} else if cheapest == 0 {
			cheapest = p
		}
	}
	if len(kept) == 0 {
		if cheapest > 0 {
			return nc, fmt.Sprintf("Can't replace with a cheaper node (replacement would cost $%.4f/h more)", cheapest-total)
		}
		return nc, "Can't replace with a cheaper node"
	}
	if spotToSpot && len(cands) == 1 {
		if len(kept) < MinInstanceTypesForSpotToSpot {
			return nc, fmt.Sprintf("SpotToSpotConsolidation requires %d cheaper instance type options than the current candidate to consolidate, got %d",
				MinInstanceTypesForSpotToSpot, len(kept))
		}
		kept = kept[:MinInstanceTypesForSpotToSpot]
	}
	if allows(reqs, v1.CapacityTypeSpot) && allows(reqs, v1.CapacityTypeOnDemand) {
		// The types were priced at their cheapest offering, which may be spot: launch spot, so that an
		// on-demand fallback never costs more than the candidates.
		reqs.Add(scheduling.MustRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot))
		if kept = kept.Compatible(reqs); len(kept) == 0 {
			return nc, "Can't replace with a cheaper node"
		}
	}
	return narrowed(nc, reqs, kept), ""
}

// allows reports whether the requirements allow the capacity type.
func allows(reqs scheduling.Requirements, capacityType string) bool {
	r, ok := reqs[v1.CapacityTypeLabelKey]
	return !ok || r.Has(capacityType)
}

// narrowed returns the planned claim restricted to the instance types (cheapest first) and requirements.
func narrowed(nc solver.NodeClaimPlan, reqs scheduling.Requirements, its cloudprovider.InstanceTypes) solver.NodeClaimPlan {
	names := make([]string, len(its))
	for i, it := range its {
		names[i] = it.Name
	}
	reqs.Add(scheduling.MustRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, names...))
	nc.Requirements = reqs.NodeSelectorRequirements()
	nc.InstanceTypes, nc.InstanceTypeNames = its, names
	if o, ok := its[0].Offerings.Available().Compatible(reqs).Cheapest(); ok {
		nc.Zone, nc.CapacityType, nc.PricePerHour = o.Zone, o.CapacityType, o.Price
	}
	return nc
}
