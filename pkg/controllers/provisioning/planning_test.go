package provisioning_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
)

// TestPlanningUntilAPassHasPlannedTheTriggeredPod: the provisioner reports that it is planning from a new
// pending pod's trigger until a pass has planned it, and the kube-scheduler's later attempts at that pod
// (each one triggers again) do not count as new pods. Registration holds new Nodes meanwhile.
func TestPlanningUntilAPassHasPlannedTheTriggeredPod(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	ctx := context.Background()
	createPool(t, "default", nil)
	pod := createPendingPod(t, "new", "1", nil)
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cached := &corev1.Pod{}
		if cachedClient.Get(ctx, client.ObjectKeyFromObject(pod), cached) != nil {
			return false, nil
		}
		ok, _ := provisioning.Provisionable(cached)
		return ok, nil // as the pod controller triggers: once the cache shows the pod marked unschedulable
	}); err != nil {
		t.Fatalf("the cache never showed the pod marked unschedulable: %v", err)
	}
	h := newHarness()
	if h.provisioner.Planning() {
		t.Fatal("planning before any pod triggered")
	}
	h.provisioner.TriggerPod(pod)
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if !h.provisioner.Planning() {
			return false, errors.New("not planning while the triggered pod waits for a pass")
		}
		_, err := h.provisioner.Provision(ctx)
		if errors.Is(err, provisioning.ErrNotSynced) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if h.provisioner.Planning() {
		t.Fatal("still planning after a pass planned the pod")
	}
	h.provisioner.TriggerPod(pod)
	if h.provisioner.Planning() {
		t.Error("the kube-scheduler's next attempt at a planned pod counts as a new pod")
	}
	// The next pass reads the pod as nominated to the NodeClaim in flight, not as one to place: still read.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := h.provisioner.Provision(ctx)
		if errors.Is(err, provisioning.ErrNotSynced) {
			return false, nil // the state has yet to see the NodeClaim the first pass created
		}
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
	h.provisioner.TriggerPod(pod)
	if h.provisioner.Planning() {
		t.Error("a pod nominated to a NodeClaim in flight counts as a new pod once a later pass has read it")
	}
}
