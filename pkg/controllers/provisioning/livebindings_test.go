package provisioning_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// cacheBeforeBinding is the manager's cache as it was before the kube-scheduler bound some pods: it lists them
// as they were then (before, by name).
type cacheBeforeBinding struct {
	client.Client
	before map[string]*corev1.Pod
}

func (c cacheBeforeBinding) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if pods, ok := list.(*corev1.PodList); ok {
		for i := range pods.Items {
			if old, ok := c.before[pods.Items[i].Name]; ok {
				pods.Items[i] = *old.DeepCopy()
			}
		}
	}
	return nil
}

// TestProvisionSkipsPodsTheAPIServerShowsBound: a pod the kube-scheduler bound after the cache last heard of it
// is not planned again. At the peak of a scale-up the cache is seconds behind the bindings, and a pass bought
// NodeClaims for pods already running.
func TestProvisionSkipsPodsTheAPIServerShowsBound(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	ctx := context.Background()
	createPool(t, "default", nil)
	pod := createPendingPod(t, "bound-since", "1", nil)
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}, Target: corev1.ObjectReference{Kind: "Node", Name: "elsewhere"}}
	if err := env.Client.SubResource("binding").Create(ctx, pod, binding); err != nil {
		t.Fatal(err)
	}
	stale := cacheBeforeBinding{Client: cachedClient, before: map[string]*corev1.Pod{pod.Name: pod}}
	h := newHarnessWith(stale, func(d *provisioning.Deps) { d.Reader = env.Client })
	var plan *solver.Plan
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		plan, err = h.provisioner.Provision(ctx)
		if errors.Is(err, provisioning.ErrNotSynced) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.NodeClaims) != 0 || len(plan.Placements) != 0 {
		t.Errorf("the pass planned %d NodeClaims and %d placements for a pod already bound, want none", len(plan.NodeClaims), len(plan.Placements))
	}
}
