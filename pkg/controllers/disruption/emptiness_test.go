package disruption_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

func decide(t *testing.T, v *disruption.View, spotToSpot bool) disruption.Outcome {
	t.Helper()
	out, err := disruption.Decide(context.Background(), v, disruption.Methods(spotToSpot, solver.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEmptinessDeletesEmptyNodesWithinBudget(t *testing.T) {
	v := view(pool(budget("2", "", 0)), catalog(),
		node("a", 4, v1.CapacityTypeOnDemand, daemonPod("ds-a")),
		node("b", 4, v1.CapacityTypeOnDemand),
		node("c", 4, v1.CapacityTypeOnDemand),
		node("d", 4, v1.CapacityTypeOnDemand, pod("web", "1")))
	out := decide(t, v, false)
	d := out.Decided()
	if d == nil || d.Method.ConsolidationType() != "empty" || d.Command.Decision() != disruption.DecisionDelete {
		t.Fatalf("want an emptiness delete, got %+v", out.Trials)
	}
	if got := names(d.Command.Candidates); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("deleted %v, want the two cheapest to disrupt (budget 2; a has a daemonset pod)", got)
	}
	if d.Eligible != 3 {
		t.Errorf("eligible %d, want 3", d.Eligible)
	}
}

func TestEmptinessWaitsForConsolidatable(t *testing.T) {
	n := node("a", 4, v1.CapacityTypeOnDemand)
	n.NodeClaim.Status.Conditions[1].Status = metav1.ConditionFalse
	if out := decide(t, view(pool(), catalog(), n), false); out.Decided() != nil {
		t.Errorf("a node that is not Consolidatable was disrupted: %+v", out.Decided().Command)
	}
}

func TestEmptinessSkipsPoolsThatNeverConsolidate(t *testing.T) {
	p := pool(func(p *v1.NodePool) { p.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never") })
	if out := decide(t, view(p, catalog(), node("a", 4, v1.CapacityTypeOnDemand)), false); out.Decided() != nil {
		t.Errorf("consolidateAfter Never, yet disrupted: %+v", out.Decided().Command)
	}
}

// A budget of zero nodes blocks Empty removal while its schedule is active (09:00 for 1h, now is 09:30)
// and not outside its window (now 11:00).
func TestBudgetWindowBlocksEmptinessOnlyWhileActive(t *testing.T) {
	p := pool(budget("0", "0 9 * * *", time.Hour))
	v := view(p, catalog(), node("a", 4, v1.CapacityTypeOnDemand))
	out := decide(t, v, false)
	if out.Decided() != nil {
		t.Fatalf("the active zero budget did not block: %+v", out.Decided().Command)
	}
	blocked := out.Trials[0].BudgetBlocked
	if len(blocked) != 1 || !strings.Contains(blocked[0].Reason, "NodePool default's disruption budgets allow 0 Empty disruptions") {
		t.Errorf("blocked %+v", blocked)
	}
	v.Now = now.Add(90 * time.Minute)
	if d := decide(t, v, false).Decided(); d == nil || d.Command.Decision() != disruption.DecisionDelete {
		t.Errorf("outside the window the empty node was not deleted")
	}
}

func TestUnreadableBudgetFailsClosed(t *testing.T) {
	p := pool(budget("0", "@wrongly", time.Hour))
	out := decide(t, view(p, catalog(), node("a", 4, v1.CapacityTypeOnDemand)), false)
	if out.Decided() != nil {
		t.Fatal("a pool with an unreadable budget was disrupted")
	}
	if b := out.Trials[0].BudgetBlocked; len(b) != 1 || !strings.Contains(b[0].Reason, "cannot be read") {
		t.Errorf("blocked %+v", b)
	}
}

func TestBudgetsSubtractDisruptingAndNotReadyNodes(t *testing.T) {
	deleting := node("b", 4, v1.CapacityTypeOnDemand)
	deleting.MarkedForDeletion = true
	notReady := node("c", 4, v1.CapacityTypeOnDemand)
	notReady.Node.Status.Conditions[0].Status = "False"
	v := view(pool(budget("50%", "", 0)), catalog(), node("a", 4, v1.CapacityTypeOnDemand), deleting, notReady, node("d", 4, v1.CapacityTypeOnDemand))
	b := disruption.Budgets(v, v1.DisruptionReasonEmpty)["default"]
	if b.Nodes != 4 || b.Allowed != 2 || b.Disrupting != 2 || b.Remaining != 0 {
		t.Errorf("budget %+v, want 4 nodes, 2 allowed, 2 disrupting, 0 remaining", b)
	}
}
