package provisioning_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// failingCreates is a client whose NodeClaim creates fail while fail says so. It records the NodeClaims it
// created and those it has since read back from the cache.
type failingCreates struct {
	client.Client
	fail func() bool

	mu       sync.Mutex
	created  []string
	observed map[string]bool
}

func (c *failingCreates) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, ok := obj.(*v1.NodeClaim); !ok {
		return c.Client.Create(ctx, obj, opts...)
	}
	if c.fail() {
		return errors.New("injected create failure")
	}
	if err := c.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.created = append(c.created, obj.GetName())
	return nil
}

func (c *failingCreates) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Client.Get(ctx, key, obj, opts...)
	if _, ok := obj.(*v1.NodeClaim); ok && err == nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.observed == nil {
			c.observed = map[string]bool{}
		}
		c.observed[key.Name] = true
	}
	return err
}

// unobserved returns the NodeClaims created but not read back yet.
func (c *failingCreates) unobserved() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, name := range c.created {
		if !c.observed[name] {
			out = append(out, name)
		}
	}
	return out
}

func TestProvisionCountsCreatedClaimsAfterAPartialFailure(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	// The second NodeClaim create fails, once.
	var creates atomic.Int32
	failing := &failingCreates{Client: cachedClient, fail: func() bool { return creates.Add(1) == 2 }}
	h := newHarnessWithClient(failing)
	createPool(t, "default", nil)
	// Hostname anti-affinity: two pods, two NodeClaims.
	for i := range 2 {
		createPendingPod(t, fmt.Sprintf("spread-%d", i), "1", func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "spread"}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
				}},
			}}
		})
	}
	awaitPending(t, 2)

	ctx := context.Background()
	plan, err := provisionOnce(ctx, h.provisioner)
	if err == nil || plan == nil || len(plan.NodeClaims) != 2 {
		t.Fatalf("first pass: plan %v, error %v; want 2 nodeclaims planned and the injected failure", plan, err)
	}
	// The pass returns only once the cache holds the claim it did create, so the next pass counts it.
	if names := failing.unobserved(); len(names) != 0 {
		t.Fatalf("the pass returned without waiting for the cache to observe nodeclaims %v", names)
	}
	var cached v1.NodeClaimList
	if err := cachedClient.List(ctx, &cached); err != nil {
		t.Fatal(err)
	}
	if len(cached.Items) != 1 {
		t.Fatalf("the cache holds %d nodeclaims when the pass returns, want the 1 created", len(cached.Items))
	}
	if _, err := provisionOnce(ctx, h.provisioner); err != nil {
		t.Fatalf("second pass: %v", err)
	}
	if n := len(listClaims(t)); n != 2 {
		t.Fatalf("%d nodeclaims after the retry, want 2 (one per pod)", n)
	}
}

// awaitPending waits until the cache shows n provisionable pods.
func awaitPending(t *testing.T, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := cachedClient.List(ctx, &pods, client.InNamespace("default")); err != nil {
			return false, err
		}
		pending := 0
		for i := range pods.Items {
			if ok, _ := provisioning.Provisionable(&pods.Items[i]); ok {
				pending++
			}
		}
		return pending >= n, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d pending pods: %v", n, err)
	}
}

// provisionOnce runs one pass as soon as the cluster state is synced.
func provisionOnce(ctx context.Context, p *provisioning.Provisioner) (*solver.Plan, error) {
	var plan *solver.Plan
	var passErr error
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		plan, passErr = p.Provision(ctx)
		return !errors.Is(passErr, provisioning.ErrNotSynced), nil
	})
	if err != nil {
		return nil, err
	}
	return plan, passErr
}
