package lifecycle

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// unhinted is a fixed count of pods without their hint.
type unhinted int

func (u unhinted) Unhinted(context.Context) (int, error) { return int(u), nil }

// planning is a fixed answer to whether the provisioner has pending pods to plan.
type planning bool

func (p planning) Planning() bool { return bool(p) }

func TestRegistrationHoldsUntilSchedulerKnowsThePlan(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	notReady := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	notReadyTaint := []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
	cases := []struct {
		name       string
		hints      Hints
		planner    Planner
		conditions []corev1.NodeCondition
		taints     []corev1.Taint
		age        time.Duration
		hold       bool
	}{
		{"ready, every pod hinted", unhinted(0), nil, ready, nil, time.Second, false},
		{"ready, pods not hinted yet", unhinted(2), nil, ready, nil, time.Second, true},
		{"not ready", unhinted(0), nil, notReady, nil, time.Second, true},
		{"ready but still tainted not-ready", unhinted(0), nil, ready, notReadyTaint, time.Second, true},
		{"held long enough", unhinted(2), nil, notReady, notReadyTaint, HoldLimit, false},
		{"no hints (nominations off)", nil, nil, notReady, nil, time.Second, false},
		{"ready, every pod hinted, nothing left to plan", unhinted(0), planning(false), ready, nil, time.Second, false},
		{"ready, every pod hinted, pending pods not planned yet", unhinted(0), planning(true), ready, nil, time.Second, true},
		{"pending pods not planned yet, held long enough", unhinted(0), planning(true), ready, nil, HoldLimit, false},
	}
	for _, c := range cases {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(now)},
			Spec:       corev1.NodeSpec{Taints: c.taints},
			Status:     corev1.NodeStatus{Conditions: c.conditions},
		}
		r := &registration{clock: clocktesting.NewFakeClock(now.Add(c.age)), hints: c.hints, planner: c.planner, held: newHeldNodes()}
		wait, opened, err := r.hold(context.Background(), "claim", node)
		if err != nil || (wait > 0) != c.hold {
			t.Errorf("%s: wait %v, err %v; want holding %v", c.name, wait, err, c.hold)
		}
		// Why a Node opens is logged when it is registered: the hold limit, or the end of what it waited for.
		if atLimit := c.hints != nil && c.age >= HoldLimit; atLimit != (opened == openedAtHoldLimit) || (c.hold || c.hints == nil) != (opened == "") {
			t.Errorf("%s: opened because %q", c.name, opened)
		}
	}
}

// readyNode returns a Node created at created whose Ready condition has the status ready.
func readyNode(name string, ready corev1.ConditionStatus, created time.Time) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}},
	}
}

// holder returns a function that asks r.hold about a claim's Node and reports whether it is held.
func holder(t *testing.T, r *registration) func(claim string, n *corev1.Node) bool {
	return func(claim string, n *corev1.Node) bool {
		t.Helper()
		wait, _, err := r.hold(context.Background(), claim, n)
		if err != nil {
			t.Fatal(err)
		}
		return wait > 0
	}
}

func TestAReadyNodeWaitsForTheOtherHeldNodesToBeReady(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now.Add(time.Second))
	r := &registration{clock: clk, hints: unhinted(0), held: newHeldNodes()}
	holding := holder(t, r)
	if !holding("slow", readyNode("slow", corev1.ConditionFalse, now)) {
		t.Fatal("a Node not ready yet is not held")
	}
	if !holding("fast", readyNode("fast", corev1.ConditionTrue, now)) {
		t.Error("a ready Node opened while another held Node was not ready yet")
	}
	if holding("slow", readyNode("slow", corev1.ConditionTrue, now)) {
		t.Error("the last Node to become ready is still held")
	}
	// A Node held past HoldLimit holds no one.
	r.held = newHeldNodes()
	if !holding("stuck", readyNode("stuck", corev1.ConditionFalse, now.Add(-HoldLimit+2*time.Second))) {
		t.Fatal("a Node not ready yet is not held")
	}
	clk.Step(time.Second)
	if holding("fast", readyNode("fast", corev1.ConditionTrue, now)) {
		t.Error("a ready Node waits for a Node held past HoldLimit")
	}
}

func TestAfterANodeReachesHoldLimitTheReadyNodesOpenAtOnce(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now.Add(HoldLimit))
	r := &registration{clock: clk, hints: unhinted(0), held: newHeldNodes()}
	holding := holder(t, r)
	// Launched a second after the first Node of the burst, and not ready yet.
	if !holding("slow", readyNode("slow", corev1.ConditionFalse, now.Add(time.Second))) {
		t.Fatal("a Node not ready yet is not held")
	}
	if !holding("fast", readyNode("fast", corev1.ConditionTrue, now.Add(time.Second/2))) {
		t.Fatal("a ready Node opened while another held Node was not ready yet")
	}
	// The first Node of the burst reaches HoldLimit and is registered.
	if holding("first", readyNode("first", corev1.ConditionFalse, now)) {
		t.Fatal("a Node past HoldLimit is still held")
	}
	r.held.releaseAll("first", clk.Now(), openedAtHoldLimit)
	// Woken, the Nodes look again in any order.
	if !holding("slow", readyNode("slow", corev1.ConditionFalse, now.Add(time.Second))) {
		t.Error("a Node not ready yet is no longer held")
	}
	if holding("fast", readyNode("fast", corev1.ConditionTrue, now.Add(time.Second/2))) {
		t.Error("a ready Node of the burst still waits for the others after one was registered at HoldLimit")
	}
	// Nor for hints: it opens when woken, not at its own HoldLimit.
	r.hints = unhinted(3)
	if holding("fast", readyNode("fast", corev1.ConditionTrue, now.Add(time.Second/2))) {
		t.Error("a ready Node of the burst still waits for hints after one was registered at HoldLimit")
	}
	r.hints = unhinted(0)
	// The Nodes of a later burst wait for each other again.
	later := clk.Now().Add(100 * time.Millisecond)
	clk.SetTime(later)
	if !holding("next-slow", readyNode("next-slow", corev1.ConditionFalse, later)) {
		t.Fatal("a Node not ready yet is not held")
	}
	if !holding("next", readyNode("next", corev1.ConditionTrue, later)) {
		t.Error("a Node created after the HoldLimit release opened while another held Node was not ready yet")
	}
}

func TestANodeWaitingForItsTaintReplacedHoldsTheReadyOnes(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now.Add(2 * time.Second))
	r := &registration{clock: clk, hints: unhinted(0), held: newHeldNodes()}
	// Its unregistered taint is replaced, and the cache does not show that yet (disarm): hold has not
	// looked at its readiness.
	r.held.add("disarming", now)
	if !holder(t, r)("ready", readyNode("ready", corev1.ConditionTrue, now)) {
		t.Error("a ready Node opened while another held Node had not been looked at yet")
	}
}

func TestTheNodesHeldAtAReleaseOpenWithIt(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now.Add(5 * time.Second))
	r := &registration{clock: clk, hints: unhinted(2), held: newHeldNodes()}
	holding := holder(t, r)
	for _, name := range []string{"first", "other"} {
		if !holding(name, readyNode(name, corev1.ConditionTrue, now)) {
			t.Fatalf("%s opened with pods not told their node", name)
		}
	}
	// Every pod is told its node: the first Node to look opens, and wakes the other.
	r.hints = unhinted(0)
	wait, opened, err := r.hold(context.Background(), "first", readyNode("first", corev1.ConditionTrue, now))
	if err != nil || wait != 0 || opened != openedHinted {
		t.Fatalf("hold = %v, %q, %v; want the first Node to open because every planned pod was told", wait, opened, err)
	}
	r.held.releaseAll("first", clk.Now(), opened)
	// Meanwhile the kube-scheduler has turned a pod away from the first Node: its hint is cleared, and the
	// provisioner plans it again. The woken Node opens all the same, not after that pass.
	r.hints, r.planner = unhinted(1), planning(true)
	wait, opened, err = r.hold(context.Background(), "other", readyNode("other", corev1.ConditionTrue, now))
	if err != nil || wait != 0 || opened != openedWithTheHeldNodes {
		t.Errorf("woken Node: hold = %v, %q, %v; want it to open with the first", wait, opened, err)
	}
	// A Node that appears after the release waits for its own pods' hints.
	later := clk.Now().Add(100 * time.Millisecond)
	clk.SetTime(later.Add(time.Second))
	r.planner = planning(false)
	if !holding("next", readyNode("next", corev1.ConditionTrue, later)) {
		t.Error("a Node created after the release opened with pods not told their node")
	}
}

// The API server's clock may run ahead of Lathe's, and creation times are whole seconds: a Node held at a
// release can look created after it.
func TestAReleaseOpensTheNodesHeldWhateverTheirCreationTime(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	r := &registration{clock: clk, hints: unhinted(0), held: newHeldNodes()}
	node := readyNode("ahead", corev1.ConditionTrue, now.Add(time.Second))
	wait, opened, err := r.hold(context.Background(), "ahead", node)
	if err != nil || wait != 0 || opened != openedHinted {
		t.Fatalf("hold = %v, %q, %v; want the Node to release the held Nodes", wait, opened, err)
	}
	r.held.releaseAll("ahead", clk.Now(), opened)
	wait, opened, err = r.hold(context.Background(), "ahead", node)
	if err != nil || wait != 0 || opened != openedWithTheHeldNodes {
		t.Errorf("woken: hold = %v, %q, %v; want the Node to open with the release it made", wait, opened, err)
	}
}

func TestReleasingOneHeldNodeWakesTheOthers(t *testing.T) {
	h := newHeldNodes()
	for _, name := range []string{"a", "b", "c"} {
		h.add(name, time.Now())
	}
	h.releaseAll("a", time.Now(), openedWithTheHeldNodes)
	woken := map[string]bool{}
	for len(h.wake) > 0 {
		woken[(<-h.wake).Object.GetName()] = true
	}
	if len(woken) != 2 || !woken["b"] || !woken["c"] {
		t.Errorf("woken %v, want b and c", woken)
	}
	if len(h.claims) != 0 {
		t.Errorf("still held: %v", h.claims)
	}
}
