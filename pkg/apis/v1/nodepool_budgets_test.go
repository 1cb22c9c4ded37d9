package v1_test

import (
	"math"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// The expectations below are upstream Karpenter's (core pkg/apis/v1/nodepool_budgets_test.go): the clock
// is 2000-06-15 12:30:30 UTC and the pool has six budgets.
var budgetNow = time.Date(2000, time.June, 15, 12, 30, 30, 0, time.UTC)

func hour() *metav1.Duration { return &metav1.Duration{Duration: time.Hour} }

func ptr(s string) *string { return &s }

func upstreamBudgets() []v1.Budget {
	return []v1.Budget{
		{Nodes: "10", Schedule: ptr("* * * * *"), Duration: hour()},
		{Nodes: "100", Schedule: ptr("* * * * *"), Duration: hour()},
		{Nodes: "100%", Schedule: ptr("* * * * *"), Duration: hour()},
		{Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted, v1.DisruptionReasonUnderutilized}, Nodes: "15", Schedule: ptr("* * * * *"), Duration: hour()},
		{Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}, Nodes: "5", Schedule: ptr("* * * * *"), Duration: hour()},
		{Reasons: []v1.DisruptionReason{v1.DisruptionReasonUnderutilized, v1.DisruptionReasonDrifted, v1.DisruptionReasonEmpty}, Nodes: "0", Schedule: ptr("@weekly"), Duration: hour()},
	}
}

var allReasons = []v1.DisruptionReason{v1.DisruptionReasonEmpty, v1.DisruptionReasonUnderutilized, v1.DisruptionReasonDrifted}

func pool(budgets []v1.Budget) *v1.NodePool {
	return &v1.NodePool{Spec: v1.NodePoolSpec{Disruption: v1.Disruption{Budgets: budgets}}}
}

func TestAllowedDisruptionsZeroWhenABudgetForEveryReasonIsActive(t *testing.T) {
	b := upstreamBudgets()
	b[5].Schedule = ptr("* * * * *")
	for _, r := range allReasons {
		if got, err := pool(b).AllowedDisruptionsByReason(budgetNow, 100, r); err != nil || got != 0 {
			t.Errorf("%s: got %d, %v; want 0", r, got, err)
		}
	}
}

func TestAllowedDisruptionsMaxWhenNoBudgetIsActive(t *testing.T) {
	b := upstreamBudgets()
	for i := range b {
		b[i].Schedule = ptr("@yearly")
	}
	for _, r := range allReasons {
		if got, err := pool(b).AllowedDisruptionsByReason(budgetNow, 100, r); err != nil || got != math.MaxInt32 {
			t.Errorf("%s: got %d, %v; want MaxInt32", r, got, err)
		}
	}
}

func TestAllowedDisruptionsIgnoresInactiveReasonBudgets(t *testing.T) {
	b := upstreamBudgets()
	b[3].Schedule, b[4].Schedule = ptr("@yearly"), ptr("@yearly")
	for _, r := range allReasons {
		if got, err := pool(b).AllowedDisruptionsByReason(budgetNow, 100, r); err != nil || got != 10 {
			t.Errorf("%s: got %d, %v; want 10", r, got, err)
		}
	}
}

func TestAllowedDisruptionsBudgetWithoutReasonsAppliesToAll(t *testing.T) {
	b := upstreamBudgets()[:1]
	for _, r := range allReasons {
		if got, err := pool(b).AllowedDisruptionsByReason(budgetNow, 100, r); err != nil || got != 10 {
			t.Errorf("%s: got %d, %v; want 10", r, got, err)
		}
	}
}

func TestAllowedDisruptionsMinimumPerReason(t *testing.T) {
	b := upstreamBudgets()
	b = append(b, v1.Budget{Reasons: []v1.DisruptionReason{v1.DisruptionReasonEmpty}, Nodes: "4", Schedule: ptr("* * * * *"), Duration: hour()})
	want := map[v1.DisruptionReason]int{v1.DisruptionReasonEmpty: 4, v1.DisruptionReasonDrifted: 5, v1.DisruptionReasonUnderutilized: 10}
	for r, w := range want {
		if got, err := pool(b).AllowedDisruptionsByReason(budgetNow, 100, r); err != nil || got != w {
			t.Errorf("%s: got %d, %v; want %d", r, got, err, w)
		}
	}
}

func TestAllowedDisruptionsFailsClosed(t *testing.T) {
	b := upstreamBudgets()
	b[0].Schedule = ptr("@wrongly")
	if got, err := b[0].AllowedDisruptions(budgetNow, 100); err == nil || got != 0 {
		t.Errorf("bad schedule: got %d, %v; want 0 and an error", got, err)
	}
	b = upstreamBudgets()
	b[0].Nodes = "1000a%"
	if got, err := b[0].AllowedDisruptions(budgetNow, 100); err == nil || got != 0 {
		t.Errorf("bad nodes: got %d, %v; want 0 and an error", got, err)
	}
	b = upstreamBudgets()
	b[0].Schedule = ptr("@wrongly")
	if got, err := pool(b).AllowedDisruptionsByReason(budgetNow, 100, v1.DisruptionReasonEmpty); err == nil || got != 0 {
		t.Errorf("pool with a bad budget: got %d, %v; want 0 and an error", got, err)
	}
}

func TestBudgetValues(t *testing.T) {
	b := upstreamBudgets()
	b[0].Schedule = ptr("@yearly")
	if got, _ := b[0].AllowedDisruptions(budgetNow, 100); got != math.MaxInt32 {
		t.Errorf("inactive: got %d", got)
	}
	if got, _ := upstreamBudgets()[0].AllowedDisruptions(budgetNow, 100); got != 10 {
		t.Errorf("int: got %d", got)
	}
	if got, _ := upstreamBudgets()[2].AllowedDisruptions(budgetNow, 100); got != 100 {
		t.Errorf("percent: got %d", got)
	}
	pct := v1.Budget{Nodes: "10%"}
	if got, _ := pct.AllowedDisruptions(budgetNow, 5); got != 1 {
		t.Errorf("10%% of 5 rounds up to 1, got %d", got)
	}
}

func TestBudgetIsActive(t *testing.T) {
	cases := []struct {
		name     string
		now      time.Time
		schedule *string
		duration *metav1.Duration
		want     bool
	}{
		{"UTC, not the local zone", time.Date(2000, time.June, 0, 0, 0, 0, 0, time.FixedZone("fake-zone", 3600)), ptr("@daily"), &metav1.Duration{Duration: 30 * time.Minute}, false},
		{"no schedule", budgetNow, nil, nil, true},
		{"active", budgetNow, ptr("* * * * *"), hour(), true},
		{"inactive", budgetNow, ptr("@yearly"), hour(), false},
		{"hit in the middle of the duration", time.Date(1000, time.January, 1, 12, 0, 0, 0, time.UTC), ptr("@yearly"), &metav1.Duration{Duration: 24 * time.Hour}, true},
		{"duration longer than the recurrence", time.Date(2024, time.January, 7, 0, 0, 0, 0, time.UTC), ptr("@daily"), &metav1.Duration{Duration: 48 * time.Hour}, true},
		{"hit after the duration", time.Date(2024, time.January, 7, 0, 0, 0, 0, time.UTC), ptr("30 6 * * SUN"), &metav1.Duration{Duration: 6 * time.Hour}, false},
	}
	for _, c := range cases {
		b := v1.Budget{Nodes: "0", Schedule: c.schedule, Duration: c.duration}
		if got, err := b.IsActive(c.now); err != nil || got != c.want {
			t.Errorf("%s: got %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}
