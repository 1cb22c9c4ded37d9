package provisioning

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

func TestNodeControllerTriggersForDrainingNodes(t *testing.T) {
	ctx := context.Background()
	now := metav1.Now()
	for _, tc := range []struct {
		name    string
		node    *corev1.Node
		trigger bool
	}{
		{"ready node", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, false},
		{"other taint", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "example.com/gpu", Effect: corev1.TaintEffectNoSchedule}}}}, false},
		{"disrupted taint", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{v1.DisruptedNoScheduleTaint}}}, true},
		{"being deleted", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", DeletionTimestamp: &now, Finalizers: []string{v1.TerminationFinalizer}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientBuilder().WithObjects(tc.node).Build()
			p := NewProvisioner(Deps{Client: kube, Clock: clocktesting.NewFakeClock(time.Now()), BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second,
				Registerer: prometheus.NewRegistry()})
			result, err := NewNodeController(kube, p).Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tc.node)})
			if err != nil {
				t.Fatal(err)
			}
			if _, open := p.batcher.TimeLeft(); open != tc.trigger {
				t.Errorf("triggered = %v, want %v", open, tc.trigger)
			}
			if p.Planning() {
				t.Error("a draining node counts as a pending pod to plan")
			}
			if (result.RequeueAfter > 0) != tc.trigger {
				t.Errorf("requeue after %s; a draining node is looked at again, others are not", result.RequeueAfter)
			}
		})
	}
}

// A pending pod keeps triggering the provisioner: a NodePool whose limit is raised, say, announces nothing
// about the pods it held back.
func TestPodControllerTriggersAgainWhilePodsPend(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		trigger bool
	}{
		{"pending", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}, true},
		{"bound", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "n"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientBuilder().WithObjects(tc.pod).Build()
			p := NewProvisioner(Deps{Client: kube, Clock: clocktesting.NewFakeClock(time.Now()), BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second,
				Registerer: prometheus.NewRegistry()})
			result, err := NewPodController(kube, p).Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tc.pod)})
			if err != nil {
				t.Fatal(err)
			}
			if _, open := p.batcher.TimeLeft(); open != tc.trigger {
				t.Errorf("triggered = %v, want %v", open, tc.trigger)
			}
			if p.Planning() != tc.trigger {
				t.Errorf("planning = %v; a pending pod no pass has read is to be planned", p.Planning())
			}
			if want := map[bool]time.Duration{true: podRetriggerInterval}[tc.trigger]; result.RequeueAfter != want {
				t.Errorf("requeue after %s, want %s", result.RequeueAfter, want)
			}
		})
	}
}

// nominatedPods is a ClusterState that knows only which pods are nominated.
type nominatedPods map[types.NamespacedName]bool

func (n nominatedPods) Synced(context.Context) bool        { return true }
func (n nominatedPods) Snapshot() *state.Snapshot          { return &state.Snapshot{} }
func (n nominatedPods) Nominate(*corev1.Pod, state.Target) {}
func (n nominatedPods) NominationOf(pod types.NamespacedName) (state.Nomination, bool) {
	return state.Nomination{Pod: pod, Target: state.Target{NodeClaim: "claim"}}, n[pod]
}

// A pod some pass planned onto a NodeClaim that still holds it opens a batch when it triggers, but does not
// keep the batch from going idle; a pod no plan holds does.
func TestPodControllerTriggersOnlyReminderForPlannedPods(t *testing.T) {
	ctx := context.Background()
	unschedulable := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
	planned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "planned", Namespace: "default", UID: "planned"}, Status: unschedulable}
	fresh := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: "default", UID: "fresh"}, Status: unschedulable}
	kube := fake.NewClientBuilder().WithObjects(planned, fresh).Build()
	clk := clocktesting.NewFakeClock(time.Now())
	p := NewProvisioner(Deps{Client: kube, Clock: clk, BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second,
		Registerer: prometheus.NewRegistry(), Cluster: nominatedPods{client.ObjectKeyFromObject(planned): true}})
	c := NewPodController(kube, p)
	if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(planned)}); err != nil {
		t.Fatal(err)
	}
	if left, open := p.batcher.TimeLeft(); !open || left != 10*time.Second {
		t.Fatalf("after the planned pod: left %v open %v, want a batch closing at max duration", left, open)
	}
	if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(fresh)}); err != nil {
		t.Fatal(err)
	}
	if left, _ := p.batcher.TimeLeft(); left != time.Second {
		t.Fatalf("after a pod no plan holds: left %v, want 1s (idle)", left)
	}
}

// A pod the kube-scheduler has not tried yet triggers the provisioner UntriedGrace after its creation, when
// untried pods are planned (PLAN_UNTRIED_PODS), and is looked at again until then.
func TestPodControllerTriggersForUntriedPodsAfterTheirGrace(t *testing.T) {
	ctx := context.Background()
	// The API server keeps a creation time to the second.
	created := time.Now().Truncate(time.Second)
	for _, tc := range []struct {
		name      string
		untried   bool
		age       time.Duration
		trigger   bool
		requeueIn time.Duration
	}{
		{"new", true, 300 * time.Millisecond, false, UntriedGrace - 300*time.Millisecond},
		{"past its grace", true, UntriedGrace, true, podRetriggerInterval},
		{"untried pods not planned", false, time.Minute, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p",
				CreationTimestamp: metav1.NewTime(created)}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
			kube := fake.NewClientBuilder().WithObjects(pod).Build()
			p := NewProvisioner(Deps{Client: kube, Clock: clocktesting.NewFakeClock(created.Add(tc.age)), BatchIdleDuration: time.Second,
				BatchMaxDuration: 10 * time.Second, Registerer: prometheus.NewRegistry(), PlanUntriedPods: tc.untried})
			result, err := NewPodController(kube, p).Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pod)})
			if err != nil {
				t.Fatal(err)
			}
			if _, open := p.batcher.TimeLeft(); open != tc.trigger {
				t.Errorf("triggered = %v, want %v", open, tc.trigger)
			}
			if p.Planning() != tc.trigger {
				t.Errorf("planning = %v, want %v", p.Planning(), tc.trigger)
			}
			if result.RequeueAfter != tc.requeueIn {
				t.Errorf("requeue after %s, want %s", result.RequeueAfter, tc.requeueIn)
			}
		})
	}
}
