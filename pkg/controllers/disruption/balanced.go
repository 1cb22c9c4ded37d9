package disruption

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// The Balanced consolidation policy (upstream v1.14, designs/balanced-consolidation.md) approves a move
// only when the share of the pool's cost it saves is at least 1/BalancedK of the share of the pool's
// disruption cost it causes: (savings / pool cost) / (disruption / pool disruption) >= 1/k.
const (
	// BalancedK is upstream's constant k.
	BalancedK = 2
	// perNodeDisruptionCost is what draining any node costs on top of its pods' eviction costs.
	perNodeDisruptionCost = 1.0
)

// poolTotals are a NodePool's denominators: the hourly price of all its nodes and the disruption cost of
// all its nodes (candidates or not).
type poolTotals struct {
	Cost, DisruptionCost float64
}

// disruptionCostOf is perNodeDisruptionCost plus the positive eviction costs of the pods.
func disruptionCostOf(pods []*corev1.Pod) float64 {
	cost := perNodeDisruptionCost
	for _, p := range pods {
		cost += math.Max(0, EvictionCost(p))
	}
	return cost
}

// balancedTotals computes the totals of every Balanced pool with a node in the view; nil when no pool is
// Balanced (the common case costs nothing).
func balancedTotals(v *View) map[string]poolTotals {
	var out map[string]poolTotals
	for _, n := range v.Snapshot.Nodes {
		pool := v.NodePools[n.NodePool]
		if n.NodeClaim == nil || pool == nil || pool.Spec.Disruption.ConsolidationPolicy != v1.ConsolidationPolicyBalanced {
			continue
		}
		if out == nil {
			out = map[string]poolTotals{}
		}
		var pods []*corev1.Pod
		for _, p := range n.Pods {
			if !scheduling.IsDaemonSetPod(p) {
				pods = append(pods, p)
			}
		}
		_, price := price(v.InstanceTypes[n.NodePool], n.Labels)
		t := out[n.NodePool]
		t.Cost += price
		t.DisruptionCost += disruptionCostOf(pods)
		out[n.NodePool] = t
	}
	return out
}

// rescheduleDisruptionCost is the candidate's part of a move's disruption cost: perNodeDisruptionCost plus
// the positive eviction costs of the pods that must move.
func rescheduleDisruptionCost(c *Candidate) float64 { return disruptionCostOf(c.ReschedulablePods) }

// Score is a Balanced pool's verdict on a move.
type Score struct {
	SavingsFraction, DisruptionFraction float64
}

// Value is savings over disruption: 0 without savings, +Inf without disruption.
func (s Score) Value() float64 {
	switch {
	case s.SavingsFraction <= 0:
		return 0
	case s.DisruptionFraction == 0:
		return math.Inf(1)
	}
	return s.SavingsFraction / s.DisruptionFraction
}

// Threshold is 1/BalancedK.
func (Score) Threshold() float64 { return 1.0 / BalancedK }

// Approved reports whether the move passes.
func (s Score) Approved() bool { return s.Value() >= s.Threshold() }

// String is upstream's ConsolidationApproved message, or for a rejected move the same figures with "<".
func (s Score) String() string {
	op := ">="
	if !s.Approved() {
		op = "<"
	}
	return fmt.Sprintf("score %.2f %s threshold %.2f (k: %d, savings %.1f%%, disruption %.1f%%)",
		s.Value(), op, s.Threshold(), BalancedK, s.SavingsFraction*100, s.DisruptionFraction*100)
}

// score scores a saving and a disruption cost against a pool's totals; a pool with no cost or no
// disruption to normalise against scores 0 (upstream's guard).
func score(savings, disruption float64, t poolTotals) Score {
	if t.Cost <= 0 || t.DisruptionCost <= 0 {
		return Score{}
	}
	return Score{SavingsFraction: savings / t.Cost, DisruptionFraction: disruption / t.DisruptionCost}
}

// Move is one consolidation move as counted by karpenter_consolidation_moves_total: a pool's part of a
// command, with whether the command was approved (every Balanced pool approving) and, when the pool is
// Balanced, the pool's own score.
type Move struct {
	NodePool *v1.NodePool
	// Candidate is the node of a single-node move; nil for a multi-node move (its events go on the pool).
	Candidate *Candidate
	Approved  bool
	Scored    bool
	Score     Score
}

// scoreCommand scores the command for each Balanced pool it takes nodes from, attributing the savings to
// the pools by their share of the candidates' price (upstream's rule for cross-pool moves). The command is
// approved when every Balanced pool approves; pools of other policies always do (and get a Move
// without a score).
func scoreCommand(totals map[string]poolTotals, cmd Command) (bool, []Move) {
	type share struct {
		pool              *v1.NodePool
		price, disruption float64
	}
	var order []string
	shares := map[string]*share{}
	source := 0.0
	for _, c := range cmd.Candidates {
		s := shares[c.NodePool.Name]
		if s == nil {
			s = &share{pool: c.NodePool}
			shares[c.NodePool.Name] = s
			order = append(order, c.NodePool.Name)
		}
		s.price += c.Price
		s.disruption += rescheduleDisruptionCost(c)
		source += c.Price
	}
	approved := true
	moves := make([]Move, 0, len(order))
	for _, name := range order {
		s := shares[name]
		m := Move{NodePool: s.pool, Approved: true}
		if len(cmd.Candidates) == 1 {
			m.Candidate = cmd.Candidates[0]
		}
		if s.pool.Spec.Disruption.ConsolidationPolicy == v1.ConsolidationPolicyBalanced {
			savings := cmd.SavingsPerHour
			if len(order) > 1 && source > 0 {
				savings *= s.price / source
			}
			m.Scored, m.Score = true, score(savings, s.disruption, totals[name])
			m.Approved = m.Score.Approved()
		}
		approved = approved && m.Approved
		moves = append(moves, m)
	}
	for i := range moves {
		moves[i].Approved = approved
	}
	return approved, moves
}

// canPass reports whether deleting the candidate outright (the best any move of it can do) passes its
// pool's Balanced threshold, with the score; candidates of other pools always can.
func canPass(totals map[string]poolTotals, c *Candidate) (bool, Score) {
	if c.NodePool.Spec.Disruption.ConsolidationPolicy != v1.ConsolidationPolicyBalanced {
		return true, Score{}
	}
	t, ok := totals[c.NodePool.Name]
	if !ok || t.Cost <= 0 {
		return true, Score{}
	}
	s := score(c.Price, rescheduleDisruptionCost(c), t)
	return s.Approved(), s
}

// rejectedScore is the score of the first Balanced pool that rejected the moves.
func rejectedScore(moves []Move) Score {
	for _, m := range moves {
		if m.Scored && !m.Score.Approved() {
			return m.Score
		}
	}
	return Score{}
}
