package provisioning

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// isEphemeralTaint reports whether a starting node carries the taint only until it is ready; a node that
// is still initializing will shed it, so the simulation ignores it rather than launching more capacity for
// pods that will fit.
func isEphemeralTaint(key string) bool {
	return key == v1.UnregisteredNoExecuteTaint.Key || v1.IsKnownEphemeralTaint(key)
}

// ErrNotSynced means the cluster state does not reflect the API server yet; provisioning now could launch
// capacity for pods that NodeClaims the state has not seen already hold.
var ErrNotSynced = errors.New("cluster state not synced")

// readInput gathers the solver's input: the pending pods, the pools and what they may launch, and volumes
// from the cache; the nodes with their pods, the NodeClaims still launching and the daemonsets from a
// snapshot of the cluster state.
// It also returns the pending pods provisioning leaves alone (see splitIgnored).
func (p *Provisioner) readInput(ctx context.Context) (solver.Input, []IgnoredPod, error) {
	var in solver.Input
	if !p.deps.Cluster.Synced(ctx) {
		return in, nil, ErrNotSynced
	}
	snapshot := p.deps.Cluster.Snapshot()
	var pods corev1.PodList
	if err := p.deps.Client.List(ctx, &pods); err != nil {
		return in, nil, fmt.Errorf("listing pods, %w", err)
	}
	pools, instanceTypes, err := ReadPools(ctx, p.deps.Client, p.deps.CloudProvider, p.observeInstanceTypes)
	if err != nil {
		return in, nil, err
	}
	in.NodePools, in.InstanceTypes = pools, instanceTypes
	var draining []*corev1.Pod
	in.Nodes, in.InFlight, draining = ExistingCapacity(snapshot)
	pending, ignored := splitIgnored(plannable(pods.Items, p.deps.Clock.Now(), p.deps.PlanUntriedPods))
	in.Pods = sortPods(append(unpinned(pending, in), draining...))
	in.DaemonSets = snapshot.DaemonSets
	if in.Volumes, err = ListVolumes(ctx, p.deps.Client); err != nil {
		return in, nil, err
	}
	return p.liveBindings(ctx, in), ignored, nil
}

// InstanceTypesObserver is told, for each pool whose instance types ReadPools asked for, the provider's
// error (nil when they resolved).
type InstanceTypesObserver func(ctx context.Context, pool *v1.NodePool, err error)

// ReadPools returns the pools new capacity may come from, with the instance types each may launch. Pools
// being deleted, static pools and pools known not to be ready are left out, and so is a pool whose instance
// types the cloud provider cannot list: one broken pool must not stop the others (a log line says why, and
// observe, when not nil, hears of it). Running out of time is not the pool's fault and fails the pass.
func ReadPools(ctx context.Context, c client.Reader, cloud cloudprovider.CloudProvider, observe InstanceTypesObserver) ([]*v1.NodePool, map[string]cloudprovider.InstanceTypes, error) {
	var list v1.NodePoolList
	if err := c.List(ctx, &list); err != nil {
		return nil, nil, fmt.Errorf("listing nodepools, %w", err)
	}
	var pools []*v1.NodePool
	types := map[string]cloudprovider.InstanceTypes{}
	for i := range list.Items {
		pool := &list.Items[i]
		if pool.DeletionTimestamp != nil || pool.Spec.Replicas != nil || meta.IsStatusConditionFalse(pool.Status.Conditions, v1.ConditionTypeReady) {
			continue
		}
		its, err := cloud.GetInstanceTypes(ctx, pool)
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("getting instance types of nodepool %s, %w", pool.Name, ctx.Err())
		}
		if observe != nil {
			observe(ctx, pool, err)
		}
		if err != nil {
			log.FromContext(ctx).Error(err, "skipping nodepool, unable to resolve instance types", "NodePool", klog.KObj(pool))
			continue
		}
		pools = append(pools, pool)
		types[pool.Name] = its
	}
	slices.SortFunc(pools, func(a, b *v1.NodePool) int { return strings.Compare(a.Name, b.Name) })
	return pools, types, nil
}

// PendingPods returns the plannable pods (see Plannable) provisioning does not ignore: what provisioning
// places, and what disruption's simulations leave room for.
func PendingPods(all []corev1.Pod, now time.Time, untried bool) []*corev1.Pod {
	pending, _ := splitIgnored(plannable(all, now, untried))
	return pending
}

// plannable returns the pods Plannable accepts.
func plannable(all []corev1.Pod, now time.Time, untried bool) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range all {
		if Plannable(&all[i], now, untried) {
			out = append(out, &all[i])
		}
	}
	return out
}

// sortPods orders pods by namespace/name, so that the same cluster gives the same plan.
func sortPods(pods []*corev1.Pod) []*corev1.Pod {
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return pods
}

// ExistingCapacity turns the snapshot into the solver's nodes (with their bound pods) and NodeClaims still
// launching, and returns the reschedulable pods of the nodes being drained or deleted.
//
// Pending pods nominated to a node or NodeClaim (see state.NominationWindow) are placed there as fixed, in
// namespace/name order, while they still fit what it can hold next to its bound pods; the others are
// left to be planned again.
//
// Such a node takes no new pods, but its capacity counts against its pool's limits until it is gone, so it
// is handed to the solver cordoned and empty. Its pods are to be placed like pending ones: capacity for them
// launches while the drain waits on PodDisruptionBudgets. A later pass sees them again (still bound, or
// pending once evicted) and finds room for them on the NodeClaims launched for them, which count as capacity.
// NodeClaims marked for deletion are left out.
func ExistingCapacity(snapshot *state.Snapshot) ([]solver.ExistingNode, []solver.InFlightNodeClaim, []*corev1.Pod) {
	var existing []solver.ExistingNode
	var draining []*corev1.Pod
	for _, n := range snapshot.Nodes {
		node := n.Node
		if n.MarkedForDeletion {
			draining = append(draining, slices.DeleteFunc(n.Pods, func(p *corev1.Pod) bool { return !scheduling.IsReschedulable(p) })...)
			node.Spec.Unschedulable = true // the snapshot's own copy
			existing = append(existing, solver.ExistingNode{Node: node})
			continue
		}
		if n.NodeClaim != nil && !meta.IsStatusConditionTrue(n.NodeClaim.Status.Conditions, v1.ConditionTypeInitialized) {
			node = withoutStartupTaints(node, n.NodeClaim)
		}
		pods := append(n.Pods, fitting(n.Allocatable, n.Requested, n.Nominated)...)
		existing = append(existing, solver.ExistingNode{Node: node, Pods: pods})
	}
	var inFlight []solver.InFlightNodeClaim
	for _, c := range snapshot.InFlight {
		if !c.MarkedForDeletion {
			inFlight = append(inFlight, solver.InFlightNodeClaim{NodeClaim: c.NodeClaim, Pods: fitting(c.Allocatable, nil, c.Nominated)})
		}
	}
	return existing, inFlight, draining
}

// fitting returns the nominated pods that fit in allocatable next to what is requested already, taking them
// in order. Unknown allocatable (a NodeClaim not launched yet) holds every pod it was launched for.
func fitting(allocatable, requested corev1.ResourceList, nominated []*corev1.Pod) []*corev1.Pod {
	if len(allocatable) == 0 {
		return nominated
	}
	used := corev1.ResourceList{}
	scheduling.AddResources(used, requested)
	var out []*corev1.Pod
	for _, pod := range nominated {
		with := used.DeepCopy()
		scheduling.AddResources(with, scheduling.PodRequests(pod))
		if scheduling.Fits(with, allocatable) {
			out, used = append(out, pod), with
		}
	}
	return out
}

// awaitsBinding reports whether a pod an input's node lists is nominated there and not bound yet: a
// solver.ExistingNode lists both its bound pods and the pods waiting for the kube-scheduler to bind them to it.
func awaitsBinding(pod *corev1.Pod) bool { return pod.Spec.NodeName == "" }

// unpinned returns the pending pods the input does not already place on a node or NodeClaim.
func unpinned(pending []*corev1.Pod, in solver.Input) []*corev1.Pod {
	pinned := map[types.NamespacedName]bool{}
	for pod := range pinnedPods(in) {
		pinned[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = true
	}
	return slices.DeleteFunc(pending, func(p *corev1.Pod) bool { return pinned[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] })
}

// place is where a plan nominates a pod: an in-flight NodeClaim or a Node, by name.
type place struct {
	inFlight bool
	name     string
}

// pinnedPods yields the pods the input places on an in-flight NodeClaim or, not bound yet, on a Node, each
// with its place.
func pinnedPods(in solver.Input) iter.Seq2[*corev1.Pod, place] {
	return func(yield func(*corev1.Pod, place) bool) {
		for _, c := range in.InFlight {
			for _, pod := range c.Pods {
				if !yield(pod, place{inFlight: true, name: c.NodeClaim.Name}) {
					return
				}
			}
		}
		for _, n := range in.Nodes {
			for _, pod := range n.Pods {
				if awaitsBinding(pod) && !yield(pod, place{name: n.Node.Name}) {
					return
				}
			}
		}
	}
}

// withoutStartupTaints returns a copy of a still-initializing node without the taints it will shed.
func withoutStartupTaints(node *corev1.Node, claim *v1.NodeClaim) *corev1.Node {
	out := node.DeepCopy()
	out.Spec.Taints = slices.DeleteFunc(out.Spec.Taints, func(t corev1.Taint) bool {
		if isEphemeralTaint(t.Key) {
			return true
		}
		return slices.ContainsFunc(claim.Spec.StartupTaints, func(s corev1.Taint) bool { return s.MatchTaint(&t) })
	})
	return out
}

// ListVolumes reads the persistent volume claims, volumes and storage classes that constrain pod zones.
func ListVolumes(ctx context.Context, c client.Reader) (solver.Volumes, error) {
	var v solver.Volumes
	var pvcs corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &pvcs); err != nil {
		return v, fmt.Errorf("listing persistent volume claims, %w", err)
	}
	var pvs corev1.PersistentVolumeList
	if err := c.List(ctx, &pvs); err != nil {
		return v, fmt.Errorf("listing persistent volumes, %w", err)
	}
	var classes storagev1.StorageClassList
	if err := c.List(ctx, &classes); err != nil {
		return v, fmt.Errorf("listing storage classes, %w", err)
	}
	return solver.Volumes{Claims: pointers(pvcs.Items), Volumes: pointers(pvs.Items), StorageClasses: pointers(classes.Items)}, nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// pendingInput is the input with every pod to place pending, including those the input already places on
// the node or NodeClaim they are nominated to, and nodes and NodeClaims holding only their bound pods. It is
// the input as upstream's scheduler has it when it computes effective zones (nominations do not count in
// topology), and the one regrouping solves (regroup).
func pendingInput(in solver.Input) solver.Input {
	out := in
	out.Pods = slices.Clone(in.Pods)
	out.Nodes = make([]solver.ExistingNode, len(in.Nodes))
	for i, n := range in.Nodes {
		out.Nodes[i] = solver.ExistingNode{Node: n.Node}
		for _, p := range n.Pods {
			if awaitsBinding(p) {
				out.Pods = append(out.Pods, p)
			} else {
				out.Nodes[i].Pods = append(out.Nodes[i].Pods, p)
			}
		}
	}
	out.InFlight = make([]solver.InFlightNodeClaim, len(in.InFlight))
	for i, c := range in.InFlight {
		out.InFlight[i] = solver.InFlightNodeClaim{NodeClaim: c.NodeClaim}
		out.Pods = append(out.Pods, c.Pods...)
	}
	return out
}
