package provisioning_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	eventsfake "github.com/lathe-autoscaler/lathe/pkg/events/fake"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// TestProvisionRecordsSchedulingDecisions: the pod controller takes pending pods up, and a pass records when it first decided on each pending pod the
// provisioner took up, found a place for the pod that fits and none for the one that does not, and
// observes each first decision in karpenter_pods_scheduling_decision_duration_seconds.
func TestProvisionRecordsSchedulingDecisions(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	clk := clocktesting.NewFakeClock(time.Now())
	reg := prometheus.NewRegistry()
	times := state.NewCluster(state.Deps{Clock: clk, Registerer: reg}).Scheduling
	p := provisioning.NewProvisioner(provisioning.Deps{
		Client: cachedClient, Cluster: cluster, CloudProvider: fake.New(catalog.KarpenterBenchmark()[:64]...), Clock: clk,
		Recorder: &eventsfake.Recorder{}, Registerer: prometheus.NewRegistry(), Scheduling: times,
	})
	createPool(t, "default", nil)
	createPendingPod(t, "fits", "1", nil)
	createPendingPod(t, "huge", "1000", nil)
	fits, huge := types.NamespacedName{Namespace: "default", Name: "fits"}, types.NamespacedName{Namespace: "default", Name: "huge"}
	// The pod controller takes each pending pod up when it triggers the provisioner.
	trigger := provisioning.NewPodController(cachedClient, p)
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, name := range []types.NamespacedName{fits, huge} {
			if _, err := trigger.Reconcile(ctx, reconcile.Request{NamespacedName: name}); err != nil {
				return false, err
			}
			if acked, _, _ := times.Times(name); acked.IsZero() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the pod controller did not take the pending pods up: %v", err)
	}
	clk.Step(2 * time.Second)
	provision(t, p, 2)

	if _, decided, schedulable := times.Times(fits); decided.IsZero() || schedulable.IsZero() {
		t.Fatalf("the pod that fits: decided %v, found a place %v", decided, schedulable)
	}
	if _, decided, schedulable := times.Times(huge); decided.IsZero() || !schedulable.IsZero() {
		t.Fatalf("the pod that fits nowhere: decided %v, found a place %v", decided, schedulable)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "karpenter_pods_scheduling_decision_duration_seconds" {
			h := f.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 2 || h.GetSampleSum() != 4 {
				t.Fatalf("decision durations: %d samples summing to %v, want 2 of 2 s", h.GetSampleCount(), h.GetSampleSum())
			}
			return
		}
	}
	t.Fatal("karpenter_pods_scheduling_decision_duration_seconds is not exported")
}
