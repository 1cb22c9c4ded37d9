package nomination

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// Nominations is what the controller reads of pkg/state: where the provisioner planned the pending pods.
type Nominations interface {
	// NominationOf returns the pod's nomination while it holds.
	NominationOf(pod types.NamespacedName) (state.Nomination, bool)
	// Nominations returns every nomination that holds.
	Nominations() []state.Nomination
	// NominatedWith returns the pods nominated to any of the targets.
	NominatedWith(targets ...state.Target) []types.NamespacedName
	// Reject ends the pod's nomination if it still names the Node, reporting whether it did.
	Reject(pod types.NamespacedName, node string) bool
}

// Deps are what the controller needs.
type Deps struct {
	// Client reads Pods from the manager's cache and patches their status.
	Client      client.Client
	Nominations Nominations
	// Changes announces pods whose nomination changed (state.Cluster.NominationChanges); may be nil.
	Changes <-chan event.GenericEvent
	Clock   clock.Clock
	// Launches, when set, tells the provider ID of a NodeClaim launched by this process before the cache
	// has it (lifecycle.Launches), so its Node is found as soon as it appears.
	Launches ProviderIDs
	// Replanner, when set, is told of a pod whose nomination ended because the kube-scheduler rejected the
	// planned Node (the provisioner).
	Replanner Replanner
}

// Replanner takes a pending pod to plan again. A pod the kube-scheduler has turned away from its open planned
// Node sits in its unschedulable queue: no update of the pod may come for a long while, and the provisioner,
// which is triggered by them, would otherwise see the pod only at its next periodic look (in one 500-pod run
// the pass came 9 s after the rejection, at the end of a batch that reminders had opened).
type Replanner interface {
	TriggerPod(pod *corev1.Pod)
}

// ProviderIDs tells the provider ID of a NodeClaim this process launched, and the other way round; empty
// when it does not know.
type ProviderIDs interface {
	ProviderIDOf(nodeClaim string) string
	NodeClaimOf(providerID string) string
}

// Controller keeps pending pods' status.nominatedNodeName on the Node Lathe planned them onto.
type Controller struct {
	client      client.Client
	nominations Nominations
	changes     <-chan event.GenericEvent
	clock       clock.Clock
	launches    ProviderIDs
	replanner   Replanner
	opened      *openings
	// told is each pod's last hint (see Unhinted), and the pod's version that carried it (see rejected).
	told *toldHints
	// memo keeps the last Unhinted count.
	memo struct {
		sync.Mutex
		at    time.Time
		count int
	}
}

// NewController returns the nomination controller.
func NewController(deps Deps) *Controller {
	c := &Controller{client: deps.Client, nominations: deps.Nominations, changes: deps.Changes, clock: deps.Clock,
		launches: deps.Launches, replanner: deps.Replanner, opened: newOpenings(), told: newToldHints()}
	return c
}

// Name returns the controller's name.
func (c *Controller) Name() string { return "pod.nomination" }

// Register watches unbound Pods, and Nodes: a Node appearing, changing taints or going away changes where
// the pods nominated to it may go.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	if err := fieldindex.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	b := builder.ControllerManagedBy(mgr).Named(c.Name())
	if c.changes != nil {
		b = b.WatchesRawSource(source.Channel(c.changes, &handler.EnqueueRequestForObject{}))
	}
	return b.
		// Pending pods, and the update that binds one and its deletion, so that what Lathe remembers of it
		// goes with it.
		For(&corev1.Pod{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(e event.CreateEvent) bool { return unbound(e.Object) },
			UpdateFunc: func(e event.UpdateEvent) bool { return unbound(e.ObjectOld) },
		})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.podsNominatedTo), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool { return nodeChanged(e.ObjectOld, e.ObjectNew) },
		})).
		// A Node can reach the cache before its NodeClaim's provider ID does (a provider that creates the
		// Node as it launches); then the Node event finds no claim, and the claim's update brings the pods.
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(c.podsNominatedToClaim), builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(e event.UpdateEvent) bool { return claimFound(e.ObjectOld, e.ObjectNew) },
			DeleteFunc: func(event.DeleteEvent) bool { return false },
		})).
		// A new Node's pods must be nominated before the Node sheds its startup taints and the kube-scheduler
		// spreads pending pods over it: one worker writing 500 pods one after the other is too slow for that.
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(c)
}

// Reconcile sets the pod's status.nominatedNodeName to the Node its nomination names, or clears a value
// Lathe set once the nomination no longer holds or names no Node yet. It leaves a value another manager set
// alone, and comes back when the nomination expires.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.client.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			c.told.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		c.told.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	if pod.Status.NominatedNodeName != "" && provisioning.NominatedNodeNameOwner(pod) != provisioning.NominationFieldManager {
		return reconcile.Result{}, nil
	}
	want, result, err := c.wanted(ctx, req.NamespacedName)
	if err != nil {
		return reconcile.Result{}, err
	}
	if want != "" && c.told.stale(pod, want) {
		// The cache has not seen Lathe's own write of this hint yet: it is in place, and a hint that looks
		// cleared here is no verdict of the kube-scheduler's. The write's event brings the pod back.
		return result, nil
	}
	if want != "" && pod.Status.NominatedNodeName == "" && c.told.nodeOf(req.NamespacedName) == want {
		if rejected, err := c.rejected(ctx, req.NamespacedName, want); err != nil {
			return reconcile.Result{}, err
		} else if rejected {
			log.FromContext(ctx).V(1).Info("kube-scheduler rejected the planned node", "Pod", klog.KObj(pod), "Node", klog.KRef("", want))
			want, result = "", reconcile.Result{}
			if c.replanner != nil {
				c.replanner.TriggerPod(pod)
			}
		}
	}
	if want != "" {
		if behind, err := c.behind(ctx, pod); err != nil {
			return reconcile.Result{}, err
		} else if behind {
			want, result = "", reconcile.Result{RequeueAfter: siblingRecheck}
		}
	}
	if pod.Status.NominatedNodeName == want {
		c.told.remember(pod, want)
		return result, nil
	}
	stored := pod.DeepCopy()
	pod.Status.NominatedNodeName = want
	if err := c.client.Status().Patch(ctx, pod, client.MergeFrom(stored), client.FieldOwner(provisioning.NominationFieldManager)); err != nil {
		if apierrors.IsInvalid(err) {
			// Bound meanwhile (a nomination may not be set on a bound pod): nothing left to tell.
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nominatedNodeName, %w", err))
	}
	c.told.remember(pod, want)
	log.FromContext(ctx).V(1).Info("nominated node", "Pod", klog.KObj(pod), "Node", klog.KRef("", want))
	return result, nil
}

// wanted is the Node the pod's nomination names (empty for none, or while its NodeClaim has no Node), and
// the requeue that comes back when it expires or, while the NodeClaim is in flight, looks again.
func (c *Controller) wanted(ctx context.Context, pod types.NamespacedName) (string, reconcile.Result, error) {
	n, ok := c.nominations.NominationOf(pod)
	switch {
	case !ok:
		return "", reconcile.Result{}, nil
	case n.NodeName != "" && n.Until.IsZero():
		return n.NodeName, reconcile.Result{RequeueAfter: inFlightRecheck}, nil // held by registration
	case n.NodeName != "":
		return n.NodeName, reconcile.Result{RequeueAfter: max(n.Until.Sub(c.clock.Now()), 0) + expiryMargin}, nil
	}
	// The cluster state may not have joined a new Node to its NodeClaim yet; the cache has it as soon as the
	// Node event that brought us here.
	node, err := c.nodeOfClaim(ctx, n.Target.NodeClaim)
	if err != nil || node == "" {
		return "", reconcile.Result{RequeueAfter: inFlightRecheck}, err
	}
	return node, reconcile.Result{RequeueAfter: inFlightRecheck}, nil
}

// behind reports whether the pod waits for a sibling of its spread group planned onto the same target to be
// hinted first (behindSibling).
func (c *Controller) behind(ctx context.Context, pod *corev1.Pod) (bool, error) {
	n, ok := c.nominations.NominationOf(client.ObjectKeyFromObject(pod))
	if !ok {
		return false, nil
	}
	return c.behindSibling(ctx, pod, n.Target)
}

// nodeOfClaim returns the name of the NodeClaim's Node, empty while it has none. A claim this process
// launched is found by the provider ID the launch returned, before the cache has the claim's status.
func (c *Controller) nodeOfClaim(ctx context.Context, name string) (string, error) {
	claim := &v1.NodeClaim{}
	if err := c.client.Get(ctx, types.NamespacedName{Name: name}, claim); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if claim.Status.ProviderID == "" && c.launches != nil {
		claim.Status.ProviderID = c.launches.ProviderIDOf(name)
	}
	nodes, err := fieldindex.NodesForNodeClaim(ctx, c.client, claim)
	if err != nil || len(nodes) == 0 {
		return "", err
	}
	return nodes[0].Name, nil
}

const (
	// concurrency is how many pods are written at once.
	concurrency = 50
	// expiryMargin is how long after a nomination's expiry the pod is looked at again, so it has expired.
	expiryMargin = 100 * time.Millisecond
	// inFlightRecheck is how often a pod nominated to a NodeClaim without a Node is looked at again, in case
	// a Node event was missed.
	inFlightRecheck = 5 * time.Second
)

// podsNominatedTo maps a Node to the pending pods nominated to it or to its NodeClaim, and the pods whose
// status.nominatedNodeName names it.
func (c *Controller) podsNominatedTo(ctx context.Context, o client.Object) []reconcile.Request {
	node, ok := o.(*corev1.Node)
	if !ok {
		return nil
	}
	c.opened.see(node, c.clock.Now())
	// Looked up, not listed: this runs on every change of every Node's taints, several per Node while a
	// pass's Nodes register, and a list of every pod and nomination each time made it the busiest code of
	// a 1,000-pod apply (docs/performance.md, fifteenth session).
	targets := []state.Target{{Node: node.Name}}
	if found, err := fieldindex.NodeClaimsForNode(ctx, c.client, node); err == nil {
		for _, nc := range found {
			targets = append(targets, state.Target{NodeClaim: nc.Name})
		}
	}
	if c.launches != nil && node.Spec.ProviderID != "" {
		if claim := c.launches.NodeClaimOf(node.Spec.ProviderID); claim != "" {
			targets = append(targets, state.Target{NodeClaim: claim})
		}
	}
	seen := map[types.NamespacedName]bool{}
	for _, pod := range c.nominations.NominatedWith(targets...) {
		seen[pod] = true
	}
	var pods corev1.PodList
	if err := c.client.List(ctx, &pods, client.MatchingFields{fieldindex.PodNominatedNodeName: node.Name}, client.UnsafeDisableDeepCopy); err == nil {
		for i := range pods.Items {
			seen[client.ObjectKeyFromObject(&pods.Items[i])] = true
		}
	}
	out := make([]reconcile.Request, 0, len(seen))
	for pod := range seen {
		out = append(out, reconcile.Request{NamespacedName: pod})
	}
	return out
}

// podsNominatedToClaim maps a NodeClaim to the pending pods nominated to it.
func (c *Controller) podsNominatedToClaim(_ context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, pod := range c.nominations.NominatedWith(state.Target{NodeClaim: o.GetName()}) {
		out = append(out, reconcile.Request{NamespacedName: pod})
	}
	return out
}

// claimFound reports whether a NodeClaim update gave it a provider ID or a Node name, by which its Node is
// found.
func claimFound(o, n client.Object) bool {
	old, ok1 := o.(*v1.NodeClaim)
	claim, ok2 := n.(*v1.NodeClaim)
	return ok1 && ok2 && (old.Status.ProviderID != claim.Status.ProviderID || old.Status.NodeName != claim.Status.NodeName)
}

// unbound reports whether the object is a Pod not bound to a Node.
func unbound(o client.Object) bool {
	pod, ok := o.(*corev1.Pod)
	return ok && pod.Spec.NodeName == ""
}

// nodeChanged reports whether a Node update may change where pods nominated to it go: its taints, whether it
// is unschedulable, initialized (open) or being deleted.
func nodeChanged(o, n client.Object) bool {
	old, ok1 := o.(*corev1.Node)
	node, ok2 := n.(*corev1.Node)
	if !ok1 || !ok2 {
		return false
	}
	return !equality.Semantic.DeepEqual(old.Spec.Taints, node.Spec.Taints) ||
		old.Spec.Unschedulable != node.Spec.Unschedulable ||
		old.Labels[v1.NodeInitializedLabelKey] != node.Labels[v1.NodeInitializedLabelKey] ||
		(old.DeletionTimestamp == nil) != (node.DeletionTimestamp == nil)
}

// unhintedMemo is how long an Unhinted count is reused: every held Node asks several times a second.
const unhintedMemo = 50 * time.Millisecond

// Unhinted counts the pending pods planned onto a Node that Lathe has not registered yet (one registration
// holds) that Lathe has not yet told of that Node: it neither wrote that Node into the pod's
// status.nominatedNodeName nor saw it there, and the pending pods planned onto a NodeClaim that has no Node
// yet. A pod whose nominatedNodeName another manager set is not counted. Registration holds new Nodes while
// it is not zero (lifecycle.Hints), so the Nodes of one provisioning pass open together: the kube-scheduler
// then sees every planned Node at once, instead of filling the first one open with pods planned elsewhere.
//
// A pod told once counts as hinted even while its status says otherwise: each kube-scheduler attempt that
// fails clears the hint, and Lathe writes it again within moments (Reconcile). While Nodes keep appearing
// the kube-scheduler retries every pending pod, so some hint is nearly always being rewritten and a count
// of the hints in place rarely reaches zero; the hold would then end at HoldLimit, Node by Node, instead
// of opening the held Nodes together once every planned pod has been told where it goes.
func (c *Controller) Unhinted(ctx context.Context) (int, error) {
	c.memo.Lock()
	defer c.memo.Unlock()
	if now := c.clock.Now(); now.Sub(c.memo.at) < unhintedMemo {
		return c.memo.count, nil
	}
	n := 0
	held := map[string]bool{}
	for _, nom := range c.nominations.Nominations() {
		node := nom.NodeName
		if node == "" {
			var err error
			if node, err = c.nodeOfClaim(ctx, nom.Target.NodeClaim); err != nil {
				return 0, err
			}
		}
		if node != "" {
			isHeld, ok := held[node]
			if !ok {
				var err error
				if isHeld, err = c.registrationHeld(ctx, node); err != nil {
					return 0, err
				}
				held[node] = isHeld
			}
			if !isHeld {
				continue
			}
		}
		pod, waiting, err := c.waitingPod(ctx, nom.Pod)
		if err != nil {
			return 0, err
		}
		if !waiting {
			continue
		}
		if node == "" {
			// Its NodeClaim is in flight: the Node of the same pass that exists already waits for this one.
			n++
			continue
		}
		if behind, err := c.behindSibling(ctx, pod, nom.Target); err != nil {
			return 0, err
		} else if behind {
			continue
		}
		if pod.Status.NominatedNodeName != node && c.told.nodeOf(nom.Pod) != node {
			n++
		}
	}
	c.memo.at, c.memo.count = c.clock.Now(), n
	return n, nil
}

// registrationHeld reports whether the Node exists and Lathe has not registered it yet.
func (c *Controller) registrationHeld(ctx context.Context, name string) (bool, error) {
	node := &corev1.Node{}
	if err := c.client.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("getting node %s, %w", name, err)
	}
	return node.Labels[v1.NodeRegisteredLabelKey] != "true", nil
}

// waitingPod returns the pod and whether it still waits for Lathe's plan: it exists, is neither bound nor
// being deleted, and no other manager (the kube-scheduler's preemption) set its nominatedNodeName.
func (c *Controller) waitingPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, bool, error) {
	pod := &corev1.Pod{}
	if err := c.client.Get(ctx, key, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("getting pod %s, %w", key, err)
	}
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil ||
		(pod.Status.NominatedNodeName != "" && provisioning.NominatedNodeNameOwner(pod) != provisioning.NominationFieldManager) {
		return pod, false, nil
	}
	return pod, true, nil
}
