package disruption_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

func rejections(out disruption.Outcome) []string {
	var msgs []string
	for _, t := range out.Trials {
		for _, r := range t.Rejections {
			msgs = append(msgs, r.Candidate.Node.Name+": "+r.Message)
		}
	}
	return msgs
}

func protect(n *disruptionNode) *disruptionNode {
	n.Node.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	return n
}

// A lightly used node whose pods fit on another node is deleted by single-node consolidation.
func TestSingleNodeDeletesWhenPodsFitElsewhere(t *testing.T) {
	v := view(pool(), catalog(),
		node("small", 4, v1.CapacityTypeOnDemand, pod("p1", "1")),
		protect(node("big", 8, v1.CapacityTypeOnDemand, pod("p2", "1"))))
	d := decide(t, v, false).Decided()
	if d == nil || d.Method.ConsolidationType() != "single" || d.Command.Decision() != disruption.DecisionDelete {
		t.Fatalf("want a single-node delete, got %+v", d)
	}
	if got := names(d.Command.Candidates); len(got) != 1 || got[0] != "small" {
		t.Errorf("deleted %v", got)
	}
}

// A node too big for its pods is replaced by a cheaper one that holds them, whose instance types are all
// cheaper than the node.
func TestSingleNodeReplacesWithCheaperNode(t *testing.T) {
	v := view(pool(), catalog(), node("big", 16, v1.CapacityTypeOnDemand, pod("p1", "1")))
	d := decide(t, v, false).Decided()
	if d == nil || d.Command.Decision() != disruption.DecisionReplace || len(d.Command.Replacements) != 1 {
		t.Fatalf("want a replacement, got %+v", d)
	}
	r := d.Command.Replacements[0]
	for _, it := range r.InstanceTypes {
		if it.Name == "c-16" {
			t.Errorf("the replacement may launch the candidate's own type: %v", r.InstanceTypeNames)
		}
	}
	if r.PricePerHour >= 0.8 || d.Command.SavingsPerHour <= 0 {
		t.Errorf("replacement costs %v, savings %v", r.PricePerHour, d.Command.SavingsPerHour)
	}
	if !strings.Contains(requirementValues(r, v1.LabelInstanceType), "c-2") {
		t.Errorf("instance-type requirement %v", r.Requirements)
	}
}

func requirementValues(r solver.NodeClaimPlan, key string) string {
	for _, req := range r.Requirements {
		if req.Key == key {
			return strings.Join(req.Values, ",")
		}
	}
	return ""
}

func TestSingleNodeKeepsNodeWithNoCheaperReplacement(t *testing.T) {
	v := view(pool(), catalog(), node("tiny", 2, v1.CapacityTypeOnDemand, pod("p1", "1500m")))
	out := decide(t, v, false)
	if out.Decided() != nil {
		t.Fatalf("replaced a node that has no cheaper replacement: %+v", out.Decided().Command)
	}
	if msgs := rejections(out); len(msgs) != 1 || !strings.Contains(msgs[0], "Can't replace with a cheaper node") {
		t.Errorf("rejections %v", msgs)
	}
}

func TestSingleNodeExplainsPodsThatWouldNotFit(t *testing.T) {
	p := pod("p1", "1", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"team": "x"} })
	v := view(pool(), catalog(), node("a", 4, v1.CapacityTypeOnDemand, p))
	msgs := rejections(decide(t, v, false))
	if len(msgs) != 1 || !strings.HasPrefix(msgs[0], "a: pods would not fit: ns/p1: ") {
		t.Errorf("rejections %v", msgs)
	}
}

func TestWhenEmptyPolicyKeepsNonEmptyNodes(t *testing.T) {
	p := pool(func(p *v1.NodePool) { p.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty })
	out := decide(t, view(p, catalog(), node("big", 16, v1.CapacityTypeOnDemand, pod("p1", "1"))), false)
	if out.Decided() != nil {
		t.Fatal("WhenEmpty consolidated a non-empty node")
	}
	if msgs := rejections(out); len(msgs) == 0 || !strings.Contains(msgs[0], "consolidation policy WhenEmpty") {
		t.Errorf("rejections %v", msgs)
	}
}

func spotPool() *v1.NodePool {
	return pool(func(p *v1.NodePool) {
		p.Spec.Template.Spec.Requirements[0].Values = []string{v1.CapacityTypeSpot}
	})
}

func TestSpotToSpotNeedsTheGate(t *testing.T) {
	v := view(spotPool(), catalog(), node("big", 16, v1.CapacityTypeSpot, pod("p1", "1")))
	out := decide(t, v, false)
	if out.Decided() != nil {
		t.Fatal("replaced spot with spot with the gate off")
	}
	if msgs := rejections(out); len(msgs) != 1 || !strings.Contains(msgs[0], "SpotToSpotConsolidation is disabled") {
		t.Errorf("rejections %v", msgs)
	}
}

func TestSpotToSpotNeedsFifteenCheaperTypes(t *testing.T) {
	v := view(spotPool(), catalog(), node("big", 16, v1.CapacityTypeSpot, pod("p1", "1")))
	msgs := rejections(decide(t, v, true))
	if len(msgs) != 1 || !strings.Contains(msgs[0], "requires 15 cheaper instance type options") {
		t.Errorf("rejections %v", msgs)
	}
	cpus := []int64{64}
	for i := int64(1); i <= 20; i++ {
		cpus = append(cpus, i)
	}
	v = view(spotPool(), catalog(cpus...), node("big", 64, v1.CapacityTypeSpot, pod("p1", "1")))
	d := decide(t, v, true).Decided()
	if d == nil || d.Command.Decision() != disruption.DecisionReplace {
		t.Fatalf("want a spot replacement, got %+v", d)
	}
	if n := len(d.Command.Replacements[0].InstanceTypes); n != disruption.MinInstanceTypesForSpotToSpot {
		t.Errorf("the spot replacement may launch %d types, want 15", n)
	}
	if got := requirementValues(d.Command.Replacements[0], v1.CapacityTypeLabelKey); got != v1.CapacityTypeSpot {
		t.Errorf("capacity type %q", got)
	}
}

func TestSpotDeleteConsolidationNeedsNoGate(t *testing.T) {
	v := view(spotPool(), catalog(),
		node("small", 4, v1.CapacityTypeSpot, pod("p1", "1")),
		protect(node("big", 8, v1.CapacityTypeSpot, pod("p2", "1"))))
	if d := decide(t, v, false).Decided(); d == nil || d.Command.Decision() != disruption.DecisionDelete {
		t.Fatalf("spot delete consolidation did not happen: %+v", d)
	}
}

// Five c-4 nodes holding 1.5 cpu each fold into one c-8 (cheaper per cpu here, so one node is always the
// cheapest way to hold any prefix of them): multi-node consolidation finds the whole prefix.
func TestMultiNodeFindsTheLargestPrefix(t *testing.T) {
	var nodes []*disruptionNode
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		nodes = append(nodes, node(n, 4, v1.CapacityTypeOnDemand, pod("p-"+n, "1500m")))
	}
	its := catalog(4, 8)
	its[1].Offerings[0].Price = 0.3
	d := decide(t, view(pool(), its, nodes...), false).Decided()
	if d == nil || d.Method.ConsolidationType() != "multi" {
		t.Fatalf("want multi-node consolidation, got %+v", d)
	}
	if len(d.Command.Candidates) != 5 || len(d.Command.Replacements) != 1 {
		t.Errorf("removes %v with %d replacements", names(d.Command.Candidates), len(d.Command.Replacements))
	}
	if d.Command.SavingsPerHour <= 0 {
		t.Errorf("savings %v", d.Command.SavingsPerHour)
	}
}

func TestMultiNodeRespectsBudgets(t *testing.T) {
	var nodes []*disruptionNode
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		nodes = append(nodes, node(n, 4, v1.CapacityTypeOnDemand, pod("p-"+n, "1")))
	}
	d := decide(t, view(pool(budget("3", "", 0)), catalog(), nodes...), false).Decided()
	if d == nil || len(d.Command.Candidates) != 3 {
		t.Fatalf("want three candidates under a budget of 3, got %+v", d)
	}
}

func TestValidationDropsACommandWhenPodsArrived(t *testing.T) {
	v := view(pool(), catalog(),
		node("small", 4, v1.CapacityTypeOnDemand, pod("p1", "1")),
		protect(node("big", 8, v1.CapacityTypeOnDemand, pod("p2", "1"))))
	d := decide(t, v, false).Decided()
	if d == nil {
		t.Fatal("no decision")
	}
	// 15 s later the other node has filled up: the pod no longer fits anywhere but a new node.
	later := view(pool(), catalog(),
		node("small", 4, v1.CapacityTypeOnDemand, pod("p1", "1")),
		protect(node("big", 8, v1.CapacityTypeOnDemand, pod("p2", "7500m"))))
	_, why, err := disruption.Validate(context.Background(), later, d.Method, d.Command)
	if err != nil || why == "" {
		t.Fatalf("validation passed a command whose pods no longer fit (%q, %v)", why, err)
	}
	cmd, why, err := disruption.Validate(context.Background(), v, d.Method, d.Command)
	if err != nil || why != "" || cmd.Decision() != disruption.DecisionDelete {
		t.Errorf("validation failed an unchanged command: %q, %v", why, err)
	}
}

func TestValidationDropsEmptinessWhenTheNodeFilled(t *testing.T) {
	d := decide(t, view(pool(), catalog(), node("a", 4, v1.CapacityTypeOnDemand)), false).Decided()
	if d == nil {
		t.Fatal("no decision")
	}
	later := view(pool(), catalog(), node("a", 4, v1.CapacityTypeOnDemand, pod("p1", "1")))
	if _, why, _ := disruption.Validate(context.Background(), later, d.Method, d.Command); !strings.Contains(why, "no longer eligible") {
		t.Errorf("why %q", why)
	}
}

func TestDriftDeletesEmptyAndReplacesBusyNodes(t *testing.T) {
	drifted := func(n *disruptionNode) *disruptionNode {
		n.NodeClaim.Status.Conditions = append(n.NodeClaim.Status.Conditions, condition(v1.ConditionTypeDrifted))
		n.NodeClaim.Status.Conditions[1].Status = "False" // not consolidatable: only drift applies
		return n
	}
	d := decide(t, view(pool(), catalog(), drifted(node("a", 4, v1.CapacityTypeOnDemand, daemonPod("ds")))), false).Decided()
	if d == nil || d.Command.Reason != v1.DisruptionReasonDrifted || d.Command.Decision() != disruption.DecisionDelete {
		t.Fatalf("empty drifted node: %+v", d)
	}
	d = decide(t, view(pool(), catalog(), drifted(node("a", 4, v1.CapacityTypeOnDemand, pod("p1", "3")))), false).Decided()
	if d == nil || d.Command.Reason != v1.DisruptionReasonDrifted || d.Command.Decision() != disruption.DecisionReplace {
		t.Fatalf("busy drifted node: %+v", d)
	}
}

// Single-node consolidation goes on past candidates it keeps (simulating the later ones over nodes
// prepared once) and deletes the first that can go: a, b and c hold a pod no other node has room for and
// no cheaper node could, w's two small pods fit on two of them.
func TestSingleNodeTriesCandidatesInTurn(t *testing.T) {
	v := view(pool(), catalog(),
		node("a", 2, v1.CapacityTypeOnDemand, pod("pa", "1500m")),
		node("b", 2, v1.CapacityTypeOnDemand, pod("pb", "1500m")),
		node("c", 2, v1.CapacityTypeOnDemand, pod("pc", "1500m")),
		node("w", 2, v1.CapacityTypeOnDemand, pod("pw1", "300m"), pod("pw2", "300m")))
	s := disruption.NewSingleNodeConsolidation(false, solver.Options{})
	all, _, _ := disruption.Candidates(v, disruption.Graceful)
	disruption.SortByDisruptionCost(all)
	cmd, rejected, err := s.Compute(context.Background(), v, disruption.Budgets(v, s.Reason()), all)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(cmd.Candidates); len(got) != 1 || got[0] != "w" || cmd.Decision() != disruption.DecisionDelete {
		t.Errorf("decided %s of %v, want to delete w", cmd.Decision(), got)
	}
	var kept []string
	for _, r := range rejected {
		kept = append(kept, r.Candidate.Name())
	}
	if strings.Join(kept, ",") != "a,b,c" {
		t.Errorf("kept %v, want a, b and c", kept)
	}
}

// A search that runs out of time says so (karpenter_voluntary_disruption_consolidation_timeouts_total).
func TestConsolidationReportsTimeouts(t *testing.T) {
	v := view(pool(), catalog(),
		node("a", 4, v1.CapacityTypeOnDemand, pod("pa", "1")),
		node("b", 4, v1.CapacityTypeOnDemand, pod("pb", "1")))
	all, _, _ := disruption.Candidates(v, disruption.Graceful)
	disruption.SortByDisruptionCost(all)
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for _, m := range []disruption.Method{disruption.NewSingleNodeConsolidation(false, solver.Options{}), disruption.NewMultiNodeConsolidation(false, solver.Options{})} {
		cmd, _, err := m.Compute(expired, v, disruption.Budgets(v, m.Reason()), all)
		if err != nil || !cmd.TimedOut {
			t.Errorf("%s: TimedOut %v, err %v; want a timeout", m.ConsolidationType(), cmd.TimedOut, err)
		}
		cmd, _, err = m.Compute(context.Background(), v, disruption.Budgets(v, m.Reason()), all)
		if err != nil || cmd.TimedOut {
			t.Errorf("%s with time: TimedOut %v, err %v", m.ConsolidationType(), cmd.TimedOut, err)
		}
	}
}

// Pods the provisioner has yet to place keep their room: with b's free 7 cpu wanted by a pending pod, a's
// pod cannot move there, so a is replaced by a cheaper node instead of deleted. The same holds for the pods
// of a node being drained. The pending pod's own capacity is not the command's to launch.
func TestConsolidationLeavesRoomForUnplacedPods(t *testing.T) {
	nodes := func() []*state.StateNode {
		return []*state.StateNode{node("a", 4, v1.CapacityTypeOnDemand, pod("pa", "1")), node("b", 8, v1.CapacityTypeOnDemand, pod("pb", "1"))}
	}
	decideFor := func(v *disruption.View) disruption.Command { return consolidateOnly(t, v, "a") }
	if cmd := decideFor(view(pool(), catalog(), nodes()...)); cmd.Decision() != disruption.DecisionDelete {
		t.Fatalf("with room on b: %s, want delete", cmd.Decision())
	}

	v := view(pool(), catalog(), nodes()...)
	v.Pending = []*corev1.Pod{pod("pending", "7", func(p *corev1.Pod) { p.Spec.NodeName = "" })}
	cmd := decideFor(v)
	if cmd.Decision() != disruption.DecisionReplace || len(cmd.Replacements) != 1 || cmd.Replacements[0].InstanceTypeNames[0] != "c-2" {
		t.Fatalf("with b's room wanted by a pending pod: %s %+v, want a replaced by a c-2", cmd.Decision(), cmd.Replacements)
	}

	draining := node("d", 8, v1.CapacityTypeOnDemand, pod("pd", "7"))
	draining.MarkedForDeletion = true
	cmd = decideFor(view(pool(), catalog(), append(nodes(), draining)...))
	if cmd.Decision() != disruption.DecisionReplace || len(cmd.Replacements) != 1 {
		t.Fatalf("with b's room wanted by a draining node's pod: %s, want a replaced", cmd.Decision())
	}
}

// A pending pod nominated to a node is held there once: the simulation does not place it again as
// pending. b (8 cpu) runs 1 cpu and holds a 3-cpu nominated pod, so a's 2-cpu pod still fits on b.
func TestNominatedPendingPodIsCountedOnce(t *testing.T) {
	nominated := pod("nominated", "3", func(p *corev1.Pod) { p.Spec.NodeName = "" })
	b := node("b", 8, v1.CapacityTypeOnDemand, pod("pb", "1"))
	b.Nominated = []*corev1.Pod{nominated}
	v := view(pool(), catalog(), node("a", 4, v1.CapacityTypeOnDemand, pod("pa", "2")), b)
	v.Pending = []*corev1.Pod{nominated.DeepCopy()}
	if cmd := consolidateOnly(t, v, "a"); cmd.Decision() != disruption.DecisionDelete {
		t.Fatalf("decided %q, want a deleted (its pod fits next to b's nominated pod)", cmd.Decision())
	}
}

// consolidateOnly runs single-node consolidation with the one named node as its candidate.
func consolidateOnly(t *testing.T, v *disruption.View, name string) disruption.Command {
	t.Helper()
	s := disruption.NewSingleNodeConsolidation(false, solver.Options{})
	all, _, _ := disruption.Candidates(v, disruption.Graceful)
	var only []*disruption.Candidate
	for _, c := range all {
		if c.Name() == name {
			only = append(only, c)
		}
	}
	cmd, _, err := s.Compute(context.Background(), v, disruption.Budgets(v, s.Reason()), only)
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}
