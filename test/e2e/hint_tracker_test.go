package e2e_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
)

// hintTracker watches a namespace's pods and remembers, per pod, the last status.nominatedNodeName Lathe set
// before the pod was bound (binding clears it), and the Node it was bound to. Unlike the Nominated events,
// which a loaded event broadcaster drops, the watch sees every pod.
type hintTracker struct {
	mu    sync.Mutex
	hint  map[string]string
	bound map[string]string
	// first is the first Node Lathe hinted each pod to.
	first map[string]string
	// current is the pod's status.nominatedNodeName as last seen unbound; writes counts Lathe's hints set
	// (each change to a Lathe-set value), and boundHinted the pods whose last unbound state had one.
	current     map[string]string
	writes      int
	boundHinted int
	// boundWith is, per bound pod, its status.nominatedNodeName in the last unbound state seen.
	boundWith map[string]string
	// bindOrder lists the pods in the order the watch saw them bound, and boundAt when.
	bindOrder []string
	boundAt   map[string]time.Time
	// runningAt is when the watch first saw each pod Running: to the watch's delay, when kwok marked it so.
	runningAt map[string]time.Time
	stop      context.CancelFunc
	done      chan struct{}
}

// trackHints starts watching ns (an informer, which lists again when a watch breaks); stop it with finish.
func trackHints(b testing.TB, ns string) *hintTracker {
	cs, err := kubernetes.NewForConfig(s.cluster.RESTConfig())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &hintTracker{hint: map[string]string{}, bound: map[string]string{}, first: map[string]string{}, current: map[string]string{}, boundWith: map[string]string{}, boundAt: map[string]time.Time{}, runningAt: map[string]time.Time{}, stop: cancel, done: make(chan struct{})}
	record := func(o any) {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if _, seen := t.runningAt[p.Name]; !seen && p.Status.Phase == corev1.PodRunning {
			t.runningAt[p.Name] = time.Now()
		}
		if p.Spec.NodeName != "" {
			if _, seen := t.bound[p.Name]; !seen {
				t.boundWith[p.Name] = t.current[p.Name]
				t.bindOrder = append(t.bindOrder, p.Name)
				t.boundAt[p.Name] = time.Now()
				if t.current[p.Name] != "" {
					t.boundHinted++
				}
			}
			t.bound[p.Name] = p.Spec.NodeName
			return
		}
		nominated := p.Status.NominatedNodeName
		if nominated != "" && provisioning.NominatedNodeNameOwner(p) == provisioning.NominationFieldManager {
			t.hint[p.Name] = nominated
			if _, ok := t.first[p.Name]; !ok {
				t.first[p.Name] = nominated
			}
			if t.current[p.Name] != nominated {
				t.writes++
			}
		}
		t.current[p.Name] = nominated
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	informer := factory.Core().V1().Pods().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, o any) { record(o) },
	}); err != nil {
		cancel()
		b.Fatal(err)
	}
	go func() {
		defer close(t.done)
		informer.RunWithContext(ctx)
	}()
	return t
}

// finish stops the watch and returns the share of the n pods bound to the Node Lathe last hinted, and the
// share that had a hint at all. Call it before writes and boundHinted.
func (t *hintTracker) finish(n int) (onHinted, hinted float64) {
	t.stop()
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	on := 0
	for pod, node := range t.hint {
		if t.bound[pod] == node {
			on++
		}
	}
	return float64(on) / float64(max(n, 1)), float64(len(t.hint)) / float64(max(n, 1))
}

// churn returns Lathe's hint writes per pod and the share of the n pods that were bound while their
// status.nominatedNodeName was set (a pod the kube-scheduler attempted after its hint was cleared, and bound,
// had none).
func (t *hintTracker) churn(n int) (writesPerPod, boundHinted float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return float64(t.writes) / float64(max(n, 1)), float64(t.boundHinted) / float64(max(n, 1))
}

// allRunningAt returns when the watch saw the last of n pods Running, and false while it has seen fewer.
func (t *hintTracker) allRunningAt(n int) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var last time.Time
	for _, at := range t.runningAt {
		if at.After(last) {
			last = at
		}
	}
	return last, len(t.runningAt) >= n
}
