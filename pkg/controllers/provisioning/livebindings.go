package provisioning

import (
	"context"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// liveBindings corrects the input for the pods bound since the cache last heard of them, as the API server
// has them now. At the peak of a scale-up the cache is seconds behind the kube-scheduler's bindings: a pass
// took bound pods for pending ones, and regrouping moved them and planned other pods into their places on
// the Node they were already bound to (one 1,000-pod run: 83 pods planned again onto 61 new claims). A
// pending pod bound since is left out; a pod waiting on a Node, bound since, counts as bound there (where
// its hint sent it, as a rule). A pod deleted since is taken the same way until the cluster state sees it
// gone. A failed read keeps the cache's view.
func (p *Provisioner) liveBindings(ctx context.Context, in solver.Input) solver.Input {
	if p.deps.Reader == nil {
		return in
	}
	unbound, err := p.unboundNow(ctx, awaitingBinding(in))
	if err != nil {
		log.FromContext(ctx).Error(err, "reading unbound pods from the API server, planning from the cache")
		return in
	}
	boundSince := func(pod *corev1.Pod) bool { return awaitsBinding(pod) && !unbound[pod.UID] }
	nodes := slices.Clone(in.Nodes)
	for i, n := range nodes {
		if !slices.ContainsFunc(n.Pods, boundSince) {
			continue
		}
		nodes[i].Pods = slices.Clone(n.Pods)
		for j, pod := range n.Pods {
			if boundSince(pod) {
				bound := pod.DeepCopy()
				bound.Spec.NodeName = n.Node.Name
				nodes[i].Pods[j] = bound
			}
		}
	}
	in.Nodes = nodes
	in.Pods = slices.DeleteFunc(slices.Clone(in.Pods), boundSince)
	return in
}

// liveReadLimit is how many pods awaiting binding unboundNow reads one by one; above it, it lists the
// unbound pods. A list is served from the API server's watch cache once that has caught up with etcd, which
// at the peak of a scale-up takes seconds (0.3-1.8 s in the passes after a 500-pod burst's release, for
// one to three pods), while a read of one pod goes to etcd.
const liveReadLimit = 32

// liveReaders is how many of those reads are made at once.
const liveReaders = 8

// unboundNow returns the UIDs of the pods that the API server has unbound now, among the given pods at least.
func (p *Provisioner) unboundNow(ctx context.Context, pods []*corev1.Pod) (map[types.UID]bool, error) {
	unbound := make(map[types.UID]bool, len(pods))
	if len(pods) > liveReadLimit {
		var live corev1.PodList
		if err := p.deps.Reader.List(ctx, &live, client.MatchingFields{"spec.nodeName": ""}); err != nil {
			return nil, err
		}
		for i := range live.Items {
			unbound[live.Items[i].UID] = true
		}
		return unbound, nil
	}
	var mu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(liveReaders)
	for _, pod := range pods {
		g.Go(func() error {
			live := &corev1.Pod{}
			if err := p.deps.Reader.Get(ctx, client.ObjectKeyFromObject(pod), live); err != nil {
				return client.IgnoreNotFound(err) // deleted since: not unbound
			}
			if live.UID == pod.UID && live.Spec.NodeName == "" {
				mu.Lock()
				unbound[pod.UID] = true
				mu.Unlock()
			}
			return nil
		})
	}
	return unbound, g.Wait()
}

// awaitingBinding returns the input's pods that are not bound: the pending ones, and those waiting on a Node.
func awaitingBinding(in solver.Input) []*corev1.Pod {
	var out []*corev1.Pod
	for _, n := range in.Nodes {
		out = append(out, n.Pods...)
	}
	return slices.DeleteFunc(append(out, in.Pods...), func(pod *corev1.Pod) bool { return !awaitsBinding(pod) })
}
