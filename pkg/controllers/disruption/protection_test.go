package disruption_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/disruption"
)

func blockedReason(t *testing.T, v *disruption.View) string {
	t.Helper()
	cands, blocked, _ := disruption.Candidates(v, disruption.Graceful)
	if len(blocked) != 1 || len(cands) != 0 {
		t.Fatalf("want one blocked node, got candidates %v, blocked %+v", names(cands), blocked)
	}
	return blocked[0].Reason
}

func TestDoNotDisruptPodBlocks(t *testing.T) {
	v := view(pool(), catalog(), node("a", 4, v1.CapacityTypeOnDemand, pod("web", "1", annotated(v1.DoNotDisruptAnnotationKey, "true"))))
	if r := blockedReason(t, v); r != `pod ns/web has "karpenter.sh/do-not-disrupt" annotation` {
		t.Errorf("reason %q", r)
	}
}

func TestDoNotDisruptDurationFromPodStart(t *testing.T) {
	// The pod started 2h ago: a 3h protection still holds, a 1h one has elapsed.
	v := view(pool(), catalog(), node("a", 4, v1.CapacityTypeOnDemand, pod("web", "1", annotated(v1.DoNotDisruptAnnotationKey, "3h"))))
	blockedReason(t, v)
	v = view(pool(), catalog(), node("a", 4, v1.CapacityTypeOnDemand, pod("web", "1", annotated(v1.DoNotDisruptAnnotationKey, "1h"))))
	if cands, blocked, _ := disruption.Candidates(v, disruption.Graceful); len(cands) != 1 || len(blocked) != 0 {
		t.Errorf("an elapsed protection still blocks: %+v", blocked)
	}
}

func TestInvalidDoNotDisruptIsReportedAndIgnored(t *testing.T) {
	v := view(pool(), catalog(), node("a", 4, v1.CapacityTypeOnDemand, pod("web", "1", annotated(v1.DoNotDisruptAnnotationKey, "banana"))))
	cands, blocked, invalid := disruption.Candidates(v, disruption.Graceful)
	if len(cands) != 1 || len(blocked) != 0 {
		t.Errorf("an invalid annotation blocked: %+v", blocked)
	}
	if len(invalid) != 1 || invalid[0].Pod.Name != "web" || !strings.Contains(invalid[0].Err.Error(), "banana") {
		t.Errorf("invalid %+v", invalid)
	}
}

func TestDoNotDisruptNodeBlocks(t *testing.T) {
	n := node("a", 4, v1.CapacityTypeOnDemand)
	n.Node.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	if r := blockedReason(t, view(pool(), catalog(), n)); !strings.Contains(r, "disruption is blocked through the") {
		t.Errorf("reason %q", r)
	}
}

func pdb(name string, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MinAvailable: &intstr.IntOrString{IntVal: 1}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func TestPDBWithoutAllowedDisruptionsBlocks(t *testing.T) {
	v := view(pool(), catalog(), node("a", 4, v1.CapacityTypeOnDemand, pod("web", "1")))
	v.Snapshot.PDBs = []*policyv1.PodDisruptionBudget{pdb("web", 0)}
	if r := blockedReason(t, v); r != "pdb ns/web prevents pod evictions (pod ns/web)" {
		t.Errorf("reason %q", r)
	}
	v.Snapshot.PDBs = []*policyv1.PodDisruptionBudget{pdb("web", 1)}
	if cands, _, _ := disruption.Candidates(v, disruption.Graceful); len(cands) != 1 {
		t.Error("a PDB that allows a disruption blocked")
	}
	v.Snapshot.PDBs = []*policyv1.PodDisruptionBudget{pdb("web", 1), pdb("web2", 1)}
	if r := blockedReason(t, v); !strings.Contains(r, "multiple PDBs") {
		t.Errorf("reason %q", r)
	}
}

func TestPDBIgnoresPodsTheDrainLeaves(t *testing.T) {
	tolerant := pod("web", "1", func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: v1.DisruptedNoScheduleTaint.Key, Operator: corev1.TolerationOpExists}}
	})
	v := view(pool(), catalog(), node("a", 4, v1.CapacityTypeOnDemand, tolerant))
	v.Snapshot.PDBs = []*policyv1.PodDisruptionBudget{pdb("web", 0)}
	if cands, _, _ := disruption.Candidates(v, disruption.Graceful); len(cands) != 1 {
		t.Error("a pod the drain does not evict was held by its PDB")
	}
}

func TestEventualClassIgnoresPodBlocksWithGracePeriod(t *testing.T) {
	n := node("a", 4, v1.CapacityTypeOnDemand, pod("web", "1", annotated(v1.DoNotDisruptAnnotationKey, "true")))
	n.NodeClaim.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
	if cands, _, _ := disruption.Candidates(view(pool(), catalog(), n), disruption.Eventual); len(cands) != 1 {
		t.Error("drift of a claim with terminationGracePeriod was blocked by do-not-disrupt")
	}
	if cands, _, _ := disruption.Candidates(view(pool(), catalog(), n), disruption.Graceful); len(cands) != 0 {
		t.Error("graceful disruption ignored do-not-disrupt")
	}
}

// Decide sorts the nodes into candidates once when no claim has a terminationGracePeriod (both classes
// see the same), and once per class when one has: then drift takes the claim do-not-disrupt holds back
// from graceful methods.
func TestDecideSortsCandidatesPerClassOnlyWhenAGracePeriodDiffers(t *testing.T) {
	heldNode := func() *disruptionNode {
		n := node("a", 4, v1.CapacityTypeOnDemand, pod("web", "1", annotated(v1.DoNotDisruptAnnotationKey, "true")))
		n.NodeClaim.Status.Conditions = append(n.NodeClaim.Status.Conditions, condition(v1.ConditionTypeDrifted))
		return n
	}
	n := heldNode()
	out := decide(t, view(pool(), catalog(), n), false)
	if d := out.Decided(); d != nil {
		t.Fatalf("without a grace period do-not-disrupt holds the node for every method, got %s by %s", d.Command.Decision(), d.Command.Reason)
	}
	if len(out.Blocked) != 1 {
		t.Errorf("blocked %+v, want the node", out.Blocked)
	}
	n = heldNode()
	n.NodeClaim.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
	out = decide(t, view(pool(), catalog(), n), false)
	if d := out.Decided(); d == nil || d.Command.Reason != v1.DisruptionReasonDrifted {
		t.Fatalf("drift of a claim with a terminationGracePeriod was held back by do-not-disrupt: %+v", d)
	}
	if len(out.Blocked) != 1 {
		t.Errorf("blocked %+v, want the node (for graceful methods)", out.Blocked)
	}
}

func TestUninitializedAndDeletingNodesAreNotCandidates(t *testing.T) {
	n := node("a", 4, v1.CapacityTypeOnDemand)
	n.NodeClaim.Status.Conditions[0].Status = metav1.ConditionFalse
	if r := blockedReason(t, view(pool(), catalog(), n)); r != "node isn't initialized" {
		t.Errorf("reason %q", r)
	}
	m := node("b", 4, v1.CapacityTypeOnDemand)
	m.MarkedForDeletion = true
	if cands, blocked, _ := disruption.Candidates(view(pool(), catalog(), m), disruption.Graceful); len(cands)+len(blocked) != 0 {
		t.Error("a node being deleted was considered")
	}
}

func TestDisruptionCostOrder(t *testing.T) {
	heavy := node("a", 4, v1.CapacityTypeOnDemand, pod("p1", "100m"), pod("p2", "100m"))
	light := node("b", 4, v1.CapacityTypeOnDemand, pod("p3", "100m"))
	costly := node("c", 4, v1.CapacityTypeOnDemand, pod("p4", "100m", annotated(corev1.PodDeletionCost, "1000000000")))
	expiring := node("d", 4, v1.CapacityTypeOnDemand, pod("p5", "100m"), pod("p6", "100m"))
	expiring.NodeClaim.Spec.ExpireAfter = v1.MustParseNillableDuration("2h") // created 1h ago: half its life left
	cands, _, _ := disruption.Candidates(view(pool(), catalog(), heavy, light, costly, expiring), disruption.Graceful)
	disruption.SortByDisruptionCost(cands)
	if got := strings.Join(names(cands), ","); got != "b,d,a,c" {
		t.Errorf("order %s, want b (1 pod), d (2 pods, half life), a (2 pods), c (deletion cost)", got)
	}
}

// A node pending pods are nominated to (pkg/state says which nominations hold) is not a candidate, as in
// Karpenter.
func TestNominatedNodeIsNotACandidate(t *testing.T) {
	n := node("a", 4, v1.CapacityTypeOnDemand)
	n.Nominated = []*corev1.Pod{pod("headed-here", "1")}
	if r := blockedReason(t, view(pool(), catalog(), n)); r != "node is nominated for a pending pod" {
		t.Errorf("reason %q", r)
	}
}
