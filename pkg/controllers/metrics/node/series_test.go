package node_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lathe-autoscaler/lathe/pkg/controllers/metrics/node"
)

// probingClock is a fake clock that calls probe whenever a pass reads the time (in the middle of it).
type probingClock struct {
	*clocktesting.FakeClock
	probe func()
}

func (c probingClock) Now() time.Time {
	c.probe()
	return c.FakeClock.Now()
}

// nodeSeries counts the node names karpenter_nodes_allocatable and karpenter_nodes_current_lifetime_seconds
// have series for.
func nodeSeries(reg prometheus.Gatherer) (map[string]int, error) {
	families, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, f := range families {
		if f.GetName() != "karpenter_nodes_allocatable" && f.GetName() != "karpenter_nodes_current_lifetime_seconds" {
			continue
		}
		names := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "node_name" {
					names[l.GetValue()] = true
				}
			}
		}
		out[f.GetName()] = len(names)
	}
	return out, nil
}

func simpleNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Now()},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}
}

// TestScrapesDuringAPassSeeEveryNode: a pass updates the node series in place, so a scrape in the middle of
// one (from the pass itself, and from a goroutine scraping all along) sees every node of the last pass; a
// node that is gone loses its series at the end of the next pass.
func TestScrapesDuringAPassSeeEveryNode(t *testing.T) {
	const nodes = 20
	var objs []client.Object
	for i := range nodes {
		objs = append(objs, simpleNode(fmt.Sprintf("n%d", i)))
	}
	kube := fake.NewClientBuilder().WithObjects(objs...).Build()
	reg := prometheus.NewRegistry()
	var mu sync.Mutex
	var seen []string
	check := func(where string) {
		counts, err := nodeSeries(reg)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			seen = append(seen, fmt.Sprintf("%s: %v", where, err))
			return
		}
		for family, n := range counts {
			if n != nodes {
				seen = append(seen, fmt.Sprintf("%s: %s has %d nodes", where, family, n))
			}
		}
		if len(counts) != 2 {
			seen = append(seen, fmt.Sprintf("%s: families %v", where, counts))
		}
	}
	probing := false
	clk := probingClock{FakeClock: clocktesting.NewFakeClock(time.Now()), probe: func() {
		if probing {
			check("mid-pass")
		}
	}}
	ctrl := node.NewController(node.Deps{Client: kube, Clock: clk, Registerer: reg})
	ctx := context.Background()
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	probing = true
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
				check("concurrent scrape")
			}
		}
	}()
	for range 200 {
		if err := ctrl.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	if len(seen) > 0 {
		t.Fatalf("scrapes during passes saw families missing nodes (%d times), first: %s", len(seen), seen[0])
	}

	probing = false
	if err := kube.Delete(ctx, simpleNode("n0")); err != nil {
		t.Fatal(err)
	}
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	counts, err := nodeSeries(reg)
	if err != nil {
		t.Fatal(err)
	}
	if counts["karpenter_nodes_allocatable"] != nodes-1 || counts["karpenter_nodes_current_lifetime_seconds"] != nodes-1 {
		t.Fatalf("after a node is deleted: %v, want %d nodes each", counts, nodes-1)
	}
}
