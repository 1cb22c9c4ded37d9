package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex"
	"github.com/lathe-autoscaler/lathe/pkg/events"
)

// Reasons of the Registered condition set by this package.
const (
	ReasonNotLaunched        = "NotLaunched"
	ReasonNodeNotFound       = "NodeNotFound"
	ReasonMultipleNodesFound = "MultipleNodesFound"
)

// registration adopts the Node whose provider ID is the claim's once it joins.
type registration struct {
	kubeClient client.Client
	clock      clock.Clock
	recorder   events.Recorder
	metrics    *lifecycleMetrics
	hints      Hints
	// planner, when set, holds the Node while the provisioner has pending pods it has not planned yet.
	planner Planner
	// reader reads a Node from the API server after a write from the cached copy conflicted (patchNode).
	reader client.Reader
	// held are the NodeClaims whose Nodes hold waits on; release wakes them all at once.
	held heldNodes
	// disarmed is, by Node name, the resource version of the cached copy of the Node from which disarm last
	// tried its patch (the cache showing that version again means the outcome has not reached it yet), or
	// disarmWritten once a patch went through.
	disarmed sync.Map
	// written are the claims' Nodes as registration last wrote them, newer than the cache for a while: the
	// Node is registered from that copy (the hold itself waits for the cache, disarm).
	written written[*corev1.Node]
}

// disarmWritten marks a Node whose unregistered taint disarm has replaced: the cache shows the write sooner
// or later, and the versions it shows meanwhile predate it.
const disarmWritten = "written"

// heldNodes are the NodeClaims registration holds, whether each one's Node was ready when last looked at,
// and the channel that wakes them.
type heldNodes struct {
	mu     sync.Mutex
	claims map[string]heldNode
	wake   chan event.GenericEvent
	// releasedAt is when the last release was (a Node registered at HoldLimit, or because every planned pod
	// was told its Node), and releasedBecause why: the Nodes created before it open as soon as they are ready,
	// waiting neither for each other nor for hints (observe, burstReleased).
	releasedAt      time.Time
	releasedBecause string
}

// heldNode is what hold last saw of a held claim's Node.
type heldNode struct {
	created time.Time // the Node's creation: past HoldLimit from it, the Node holds no one
	ready   bool
	// waitingOn is what the hold last waited for, logged when the Node is registered.
	waitingOn string
}

func newHeldNodes() heldNodes {
	return heldNodes{claims: map[string]heldNode{}, wake: make(chan event.GenericEvent, wakeBuffer)}
}

// wakeBuffer bounds the wake-ups in flight; one beyond it is dropped and the claim's recheck finds it.
const wakeBuffer = 4096

// add records that name is held, its Node created at created, before hold has looked at its readiness
// (observe records it then): until then it counts as not ready, so the ready Nodes wait for it. Counted as
// nothing, a Node waiting for its replaced taint to reach the cache let the others open without it; it
// opened a second or two later, and the pods the kube-scheduler tried meanwhile went elsewhere.
func (h *heldNodes) add(name string, created time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.claims[name]; !ok {
		h.claims[name] = heldNode{created: created}
	}
}

// observe records whether the held claim's Node is ready, and reports whether another held Node, younger
// than HoldLimit at now, is not. Once a release has come after this Node was created, it waits for no
// other: at HoldLimit the Nodes of that burst have missed opening together, and the ready ones then open at
// once instead of one by one, each at its own HoldLimit; otherwise every Node held then was ready.
func (h *heldNodes) observe(name string, created time.Time, ready bool, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.claims[name] = heldNode{created: created, ready: ready, waitingOn: h.claims[name].waitingOn}
	if h.releasedLocked(created) {
		return false
	}
	for other, n := range h.claims {
		if other != name && !n.ready && !pastHoldLimit(n.created, now) {
			return true
		}
	}
	return false
}

// burstReleased reports whether a release came after a Node created at created appeared, and why the Node
// opens then: the release decided for every Node held with it, and a Node woken by it opens as soon as it is
// ready, not after the checks that let the release happen come out the same once more. Those can change
// under it: the first Node open makes the kube-scheduler turn some pods away, which sets the provisioner
// planning, and a Node that waited for that pass would open seconds after the others.
func (h *heldNodes) burstReleased(created time.Time) (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.releasedLocked(created) {
		return false, ""
	}
	if h.releasedBecause == openedAtHoldLimit {
		return true, openedAfterHoldLimit
	}
	return true, openedWithTheHeldNodes
}

// wakeUp brings the claim back at once, or at its recheck when the wake-ups in flight are full.
func (h *heldNodes) wakeUp(name string) {
	select {
	case h.wake <- event.GenericEvent{Object: &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}}:
	default:
	}
}

// releasedLocked is burstReleased with h.mu held.
func (h *heldNodes) releasedLocked(created time.Time) bool { return !h.releasedAt.Before(created) }

// waiting records what the held claim's Node waits for.
func (h *heldNodes) waiting(name, on string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.claims[name]
	n.waitingOn = on
	h.claims[name] = n
}

// releaseAll forgets name and wakes every other held claim, so that the Nodes become schedulable together.
// at is when name's Node opens and because why; when that reason releases the Nodes held with it
// (releases), they open as soon as they are ready (burstReleased). It returns what name's Node last waited
// for.
func (h *heldNodes) releaseAll(name string, at time.Time, because string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if releases(because) {
		// Creation times come from the API server's clock, in whole seconds: a Node held now may look
		// created after this clock's now, and would miss the release it is part of (the releasing Node
		// woken to open would release again, and again).
		for _, n := range h.claims {
			if n.created.After(at) {
				at = n.created
			}
		}
		if at.After(h.releasedAt) {
			h.releasedAt, h.releasedBecause = at, because
		}
	}
	waitedOn := h.claims[name].waitingOn
	delete(h.claims, name)
	for other := range h.claims {
		h.wakeUp(other)
		delete(h.claims, other)
	}
	return waitedOn
}

func (r *registration) reconcile(ctx context.Context, nodeClaim *v1.NodeClaim) (outcome, error) {
	if isTrue(nodeClaim, v1.ConditionTypeRegistered) {
		return outcome{}, nil
	}
	now := r.clock.Now()
	if !isTrue(nodeClaim, v1.ConditionTypeLaunched) {
		setUnknown(nodeClaim, now, v1.ConditionTypeRegistered, ReasonNotLaunched, "node not launched")
		return outcome{}, nil
	}
	node, err := nodeForNodeClaim(ctx, r.kubeClient, nodeClaim)
	var duplicate *duplicateNodesError
	switch {
	case errors.Is(err, errNodeNotFound):
		// The Node watch reconciles the claim again when its Node joins.
		setUnknown(nodeClaim, now, v1.ConditionTypeRegistered, ReasonNodeNotFound, "awaiting node")
		return outcome{}, nil
	case errors.As(err, &duplicate):
		setCondition(nodeClaim, now, v1.ConditionTypeRegistered, metav1.ConditionFalse, ReasonMultipleNodesFound, err.Error())
		return outcome{}, fmt.Errorf("registering nodeclaim, %w", err)
	case err != nil:
		return outcome{}, fmt.Errorf("registering nodeclaim, %w", err)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("Node", klog.KObj(node)))
	firstRegistration := node.Labels[v1.NodeRegisteredLabelKey] != "true"
	if firstRegistration {
		if disarming, err := r.disarm(ctx, nodeClaim.Name, node); err != nil || disarming {
			r.held.add(nodeClaim.Name, node.CreationTimestamp.Time)
			r.held.waiting(nodeClaim.Name, "the cache to show its unregistered taint replaced")
			return outcome{requeueAfter: holdRecheck}, err
		}
		wait, opened, err := r.hold(ctx, nodeClaim.Name, node)
		if err != nil || wait > 0 {
			return outcome{requeueAfter: wait}, err // hold recorded the claim as held
		}
		if opened == openedHinted {
			// Every Node held opens now: this one too, woken the same way as the others, rather than first
			// and alone while the others wait for a worker. In the 500-pod benchmark it opened a second
			// before them at times, and the kube-scheduler sent pods planned elsewhere to it.
			r.held.releaseAll(nodeClaim.Name, r.clock.Now(), opened)
			r.held.wakeUp(nodeClaim.Name)
			return outcome{requeueAfter: holdRecheck}, nil
		}
		waitedOn := r.held.releaseAll(nodeClaim.Name, r.clock.Now(), opened)
		if opened != "" {
			ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("heldFor", r.clock.Since(node.CreationTimestamp.Time).Round(time.Second).String(), "openedBecause", opened))
		}
		if opened == openedAtHoldLimit {
			if waitedOn == "" {
				waitedOn = "not recorded" // another Node's release cleared it
			}
			ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("holdLimitReachedWaitingFor", waitedOn))
		}
		r.disarmed.Delete(node.Name)
	}
	// The Node as written stays in r.written until the cache shows it: initialization reads it from there.
	if err := r.syncNode(ctx, nodeClaim, r.written.newest(nodeClaim.Name, node), firstRegistration); err != nil {
		return outcome{}, err
	}
	nodeClaim.Status.NodeName = node.Name
	setTrue(nodeClaim, now, v1.ConditionTypeRegistered)
	if firstRegistration {
		// Counted once: a retry after a failed status write finds the registered label on the Node.
		r.metrics.nodeCreated(nodeClaim)
		log.FromContext(ctx).Info("registered nodeclaim")
	}
	return outcome{}, nil
}

// holdRecheck is how often registration looks again at a Node it holds. The Node's own events and the first
// release (heldNodes.wake) bring the claim back sooner; the period only bounds how late the end of a wait
// on hints is seen. Every held claim is requeued at this period, on the workers that also launch the claims
// of the pass: at 100 ms a hundred held Nodes made a thousand rechecks a second.
const holdRecheck = 500 * time.Millisecond

// hold returns how long to wait before registering a new Node; zero to register it now. Removing the
// unregistered taint is meant to be the moment the Node becomes schedulable, and the kube-scheduler must
// know the plan by then: its first attempt at each pending pod after the Node opens decides where the pod
// goes, it tries the pod's status.nominatedNodeName first, and it clears that hint on every attempt that
// fails. So the Node is held while it is not Ready (or still has the node lifecycle controller's not-ready
// or unreachable taint), and while any pending pod Lathe planned onto a Node registration holds has not
// been given its hint, or is planned onto a NodeClaim whose Node has not appeared yet (Hints.Unhinted), or
// while pending pods wait for the provisioner to plan them (Planner: a burst reaches it in pieces);
// the first Node released wakes every held one (heldNodes), so that the Nodes of a pass open together,
// every pod planned onto them nominated. A ready Node also waits for the other held Nodes to be ready
// (the node lifecycle controller takes their not-ready taints off one by one, seconds apart under load):
// the first Nodes open would otherwise take the pods the kube-scheduler tries meanwhile that are hinted to
// Nodes still held. HoldLimit after the Node appeared it is registered whatever the state, and holds no
// other Node. Either release, at HoldLimit or with every pod told, decides for every Node held then: they
// stop waiting for each other's readiness (heldNodes.observe) and for hints and the provisioner
// (heldNodes.burstReleased), and each ready one opens when woken, not at its own HoldLimit or after the
// provisioner's next pass.
func (r *registration) hold(ctx context.Context, claim string, node *corev1.Node) (time.Duration, string, error) {
	now := r.clock.Now()
	switch {
	case r.hints == nil:
		return 0, "", nil
	case pastHoldLimit(node.CreationTimestamp.Time, now):
		return 0, openedAtHoldLimit, nil
	}
	ready := readyWithoutNotReadyTaints(node)
	othersUnready := r.held.observe(claim, node.CreationTimestamp.Time, ready, now)
	switch {
	case !ready:
		r.held.waiting(claim, "the node to be ready")
		return holdRecheck, "", nil
	case othersUnready:
		r.held.waiting(claim, "other held nodes to be ready")
		return holdRecheck, "", nil
	}
	if released, why := r.held.burstReleased(node.CreationTimestamp.Time); released {
		// Waiting for hints now would open the ready Nodes one by one, each at its own HoldLimit or after its
		// own look at the hints, while the kube-scheduler fills the first ones open with the pods planned
		// onto the rest.
		return 0, why, nil
	}
	if r.planner != nil && r.planner.Planning() {
		// The next pass may put some of them onto this Node, or move pods planned here elsewhere.
		r.held.waiting(claim, "the provisioner to plan new pending pods")
		return holdRecheck, "", nil
	}
	n, err := r.hints.Unhinted(ctx)
	switch {
	case err != nil:
		return 0, "", err
	case n == 0:
		return 0, openedHinted, nil
	}
	r.held.waiting(claim, "pods to be told their node")
	return holdRecheck, "", nil
}

// Why a held Node opens, as logged (openedBecause).
const (
	// openedAtHoldLimit: held HoldLimit.
	openedAtHoldLimit = "hold limit"
	// openedHinted: the Nodes held are ready and every pod planned onto them has been told its Node. It
	// releases them; each, the releasing one too, then opens and is logged with openedWithTheHeldNodes.
	openedHinted = "every planned pod told its node"
	// openedAfterHoldLimit: held when another Node opened at HoldLimit.
	openedAfterHoldLimit = "an older node reached the hold limit"
	// openedWithTheHeldNodes: held when a Node found the held Nodes ready and every pod planned onto them
	// told its Node (openedHinted), which opens them all.
	openedWithTheHeldNodes = "released with the held nodes: every planned pod told its node"
)

// releases reports whether a Node opening for that reason releases the Nodes held with it.
func releases(opened string) bool { return opened == openedAtHoldLimit || opened == openedHinted }

// disarm replaces the karpenter.sh/unregistered:NoExecute taint of a Node registration would hold by its
// NoSchedule twin, and reports whether the Node must wait for its cached copy to show that. The taint
// eviction controller deletes a pod bound to a Node with a NoExecute taint the pod does not tolerate, and it
// learns that the taint is gone from its own Node watch: a pod the kube-scheduler binds the moment the
// taint goes (a hinted pod is bound within milliseconds) can reach it before the Node's update does, and is
// deleted. With the NoExecute effect removed while the Node is still unschedulable, that watch has the
// whole hold to catch up. A Node held past HoldLimit registers as it is.
func (r *registration) disarm(ctx context.Context, claim string, node *corev1.Node) (bool, error) {
	if r.hints == nil || pastHoldLimit(node.CreationTimestamp.Time, r.clock.Now()) ||
		!hasTaint(node.Spec.Taints, v1.UnregisteredNoExecuteTaint) {
		return false, nil
	}
	if patched, ok := r.disarmed.Load(node.Name); ok && (patched == node.ResourceVersion || patched == disarmWritten) {
		return true, nil // a write was made; its outcome has yet to reach the cache
	}
	r.disarmed.Store(node.Name, node.ResourceVersion)
	changed, err := patchNode(ctx, r.kubeClient, r.reader, &r.written, claim, node.DeepCopy(), func(n *corev1.Node) (bool, error) {
		if !hasTaint(n.Spec.Taints, v1.UnregisteredNoExecuteTaint) {
			return false, nil // an earlier write did it; the cache has yet to show it
		}
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.MatchTaint(&v1.UnregisteredNoExecuteTaint)
		})
		n.Spec.Taints = mergeTaints(n.Spec.Taints, []corev1.Taint{v1.UnregisteredNoScheduleTaint})
		return true, nil
	})
	switch {
	case apierrors.IsConflict(err):
		return true, nil // lost to other writers every time; the next recheck tries again
	case err != nil:
		return false, fmt.Errorf("replacing the unregistered taint of node %s, %w", node.Name, err)
	}
	// Written now or by an earlier patch the cache has yet to show (unchanged): either way, done.
	r.disarmed.Store(node.Name, disarmWritten)
	if changed {
		log.FromContext(ctx).V(1).Info("replaced the unregistered taint", "taint", v1.UnregisteredNoScheduleTaint.ToString())
	}
	return true, nil
}

// pastHoldLimit reports whether a Node created at created is no longer held at now (HoldLimit).
func pastHoldLimit(created, now time.Time) bool { return now.Sub(created) >= HoldLimit }

// readyWithoutNotReadyTaints reports whether the Node is Ready and the node lifecycle controller has taken
// off its not-ready and unreachable taints.
func readyWithoutNotReadyTaints(node *corev1.Node) bool {
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	return ready && !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
	})
}

// syncNode makes the Node the claim's: the claim's labels and annotations (Node-only ones are kept), its
// taints (startup taints only at first registration, none when the Node opts out), the owner reference,
// the termination finalizer and the registered label, without the unregistered taint; and, at first
// registration, the initialized label when the Node is already initialized (notInitialized).
func (r *registration) syncNode(ctx context.Context, nodeClaim *v1.NodeClaim, node *corev1.Node, firstRegistration bool) error {
	if firstRegistration && !slices.ContainsFunc(node.Spec.Taints, v1.IsUnregisteredTaint) {
		// Karpenter refuses to register such a Node; Lathe adopts it anyway so providers that don't add the
		// taint still work, and says so.
		r.recorder.Publish(UnregisteredTaintMissingEvent(nodeClaim))
		log.FromContext(ctx).Info("node registered without the unregistered taint", "taint", v1.UnregisteredNoExecuteTaint.ToString())
	}
	_, err := patchNode(ctx, r.kubeClient, r.reader, &r.written, nodeClaim.Name, node, func(n *corev1.Node) (bool, error) {
		stored := n.DeepCopy()
		n.Labels = mergeMaps(n.Labels, nodeClaim.Labels)
		n.Labels[v1.NodeRegisteredLabelKey] = "true"
		if len(nodeClaim.Annotations) > 0 {
			n.Annotations = mergeMaps(n.Annotations, nodeClaim.Annotations)
		}
		if n.Labels[v1.NodeDoNotSyncTaintsKey] != "true" {
			n.Spec.Taints = mergeTaints(n.Spec.Taints, nodeClaim.Spec.Taints)
			if firstRegistration {
				n.Spec.Taints = mergeTaints(n.Spec.Taints, nodeClaim.Spec.StartupTaints)
			}
		}
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, v1.IsUnregisteredTaint)
		if firstRegistration {
			if reason, _ := notInitialized(nodeClaim, n); reason == "" {
				// Already usable (registration held it until Ready): labelled initialized in this write rather
				// than the next, one Node update fewer for every watcher of Nodes, the kube-scheduler first.
				n.Labels[v1.NodeInitializedLabelKey] = "true"
			}
		}
		if err := controllerutil.SetControllerReference(nodeClaim, n, r.kubeClient.Scheme()); err != nil {
			return false, fmt.Errorf("setting nodeclaim as owner of node, %w", err)
		}
		controllerutil.AddFinalizer(n, v1.TerminationFinalizer)
		return !equality.Semantic.DeepEqual(stored, n), nil
	})
	if err != nil {
		return fmt.Errorf("syncing node, %w", err)
	}
	return nil
}

// errNodeNotFound means no Node has the claim's provider ID yet.
var errNodeNotFound = errors.New("no node with the nodeclaim's provider id")

// duplicateNodesError means several Nodes have the claim's provider ID, which must never happen.
type duplicateNodesError struct {
	providerID string
	names      []string
}

func (e *duplicateNodesError) Error() string {
	return fmt.Sprintf("nodes %v all have provider id %q", e.names, e.providerID)
}

// nodeForNodeClaim returns the one Node whose spec.providerID is the claim's status.providerID, through
// the cache's Node index (pkg/controllers/fieldindex).
func nodeForNodeClaim(ctx context.Context, kubeClient client.Client, nodeClaim *v1.NodeClaim) (*corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := kubeClient.List(ctx, nodes, client.MatchingFields{fieldindex.NodeProviderID: nodeClaim.Status.ProviderID}); err != nil {
		return nil, fmt.Errorf("listing nodes, %w", err)
	}
	var found []*corev1.Node
	for i := range nodes.Items {
		if nodes.Items[i].Spec.ProviderID == nodeClaim.Status.ProviderID {
			found = append(found, &nodes.Items[i])
		}
	}
	switch len(found) {
	case 0:
		return nil, errNodeNotFound
	case 1:
		return found[0], nil
	}
	names := make([]string, 0, len(found))
	for _, n := range found {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	return nil, &duplicateNodesError{providerID: nodeClaim.Status.ProviderID, names: names}
}

// hasTaint reports whether taints has one with the key and effect of taint.
func hasTaint(taints []corev1.Taint, taint corev1.Taint) bool {
	return slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.MatchTaint(&taint) })
}

// mergeTaints adds the taints of add whose key and effect aren't in taints yet.
func mergeTaints(taints, add []corev1.Taint) []corev1.Taint {
	for _, t := range add {
		if !hasTaint(taints, t) {
			taints = append(taints, t)
		}
	}
	return taints
}

// mergeMaps returns dst (allocated when nil) with every entry of src copied in.
func mergeMaps(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	maps.Copy(dst, src)
	return dst
}
