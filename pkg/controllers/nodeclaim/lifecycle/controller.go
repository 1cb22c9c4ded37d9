// Package lifecycle moves a NodeClaim from creation to a Ready node. One controller runs four phases in
// order, one file each:
//
//   - launch: CloudProvider.Create, then status.providerID, capacity, allocatable and the instance's
//     labels are copied onto the claim (Launched).
//   - registration: the Node with the claim's provider ID joined; labels, annotations, taints, the owner
//     reference and the termination finalizer are synced onto it and the karpenter.sh/unregistered taint is
//     removed (Registered).
//   - initialization: the Node is Ready, its startup and ephemeral taints are gone and its extended
//     resources are registered (Initialized).
//   - liveness: a claim that isn't Launched within LaunchTimeout or Registered within RegistrationTimeout of
//     its creation is deleted, so that its pods are planned again.
//
// The controller adds the karpenter.sh/termination finalizer before any phase runs, then writes the
// claim's metadata and status once and sets the summary Ready condition (Launched ∧ Registered ∧
// Initialized). Deleting claims belong to the termination controller.
//
// Writes are JSON patches in which every replaced value is guarded by a test of its old value
// (pkg/fieldpatch): a write loses only to a concurrent change of what it replaces (the taint list, the
// conditions), not to a heartbeat or another controller's label in between. A write that loses is made
// again from a copy read from the API server, not from the cache, which lags seconds behind a new Node's
// many writers when the API server is loaded (nodepatch.go, and Controller.conflicted for claims). Until
// the cache shows this controller's own last write, the copy the API server returned for it is used
// instead (written.go), so that the controller does not lose to itself.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
)

// ProviderIDIndex is the field index on NodeClaim status.providerID that Register adds (see
// pkg/controllers/fieldindex), used to map a Node to its NodeClaim.
const ProviderIDIndex = fieldindex.NodeClaimProviderID

// Deps are the controller's dependencies.
type Deps struct {
	// Client reads and writes NodeClaims and Nodes. Its scheme must know both (owner references).
	Client client.Client
	// CloudProvider launches instances.
	CloudProvider cloudprovider.CloudProvider
	// Clock measures the liveness timeouts and stamps condition transitions.
	Clock clock.Clock
	// Recorder publishes the lifecycle events.
	Recorder events.Recorder
	// Registerer receives the controller's metrics.
	Registerer prometheus.Registerer
	// Hints, when set, makes registration hold a new Node's karpenter.sh/unregistered taint until the
	// kube-scheduler can follow the plan (see registration.hold), for at most HoldLimit after the Node
	// appeared.
	Hints Hints
	// Planner, when set with Hints, also holds a new Node while the provisioner has pending pods it has not
	// planned yet.
	Planner Planner
	// Reader reads a Node or NodeClaim straight from the API server when a write from the cached copy
	// conflicted; nil means Client. Give it the manager's API reader: the cache lags behind new Nodes under load.
	Reader client.Reader
	// Launches, when set, is where the launches are kept, shared with the controllers that ask ProviderIDOf;
	// nil means a store of the controller's own.
	Launches *Launches
}

// Hints reports whether the kube-scheduler has been told where every pending pod Lathe planned is headed.
type Hints interface {
	// Unhinted counts the pending pods planned onto a Node not registered yet that have not been told of
	// that Node, and those planned onto a NodeClaim whose Node has not appeared yet.
	Unhinted(ctx context.Context) (int, error)
}

// Planner reports whether pods of the burst that new Nodes belong to are still to be planned.
type Planner interface {
	// Planning reports whether a pending pod that needs capacity waits for a provisioning pass, or the pass
	// under way has not nominated the pods it took in yet.
	Planning() bool
}

// HoldLimit bounds how long registration holds a new Node for Hints and for the Node to become Ready. A
// burst of pods reaches the provisioner in pieces (a batch closes BATCH_MAX_DURATION, 10 s, after its first
// pod; the kube-scheduler marks pods unschedulable a few dozen a second), and the Nodes of the first pass
// must still be held when the next pass has planned the rest: opened earlier, they take the pods the
// kube-scheduler tries meanwhile, whatever the plan (docs/performance.md, twenty-first session). At 20 s,
// on a loaded control plane, the next pass's Nodes were still coming up when the first pass's reached the
// limit in 4 of the 6 runs of 1,000 pods whose logs were read (twenty-second session).
const HoldLimit = 30 * time.Second

// Controller reconciles the lifecycle of NodeClaims that aren't being deleted.
type Controller struct {
	kubeClient client.Client
	reader     client.Reader
	clock      clock.Clock
	// conflicted holds the names of the claims whose last write lost a race (a guard failed): their next
	// reconcile reads the claim from the API server, as the cached copy is likely the stale one that lost.
	conflicted sync.Map
	// written are the claims as this controller last wrote them, newer than the cache for a while.
	written written[*v1.NodeClaim]

	launch         *launch
	registration   *registration
	initialization *initialization
	liveness       *liveness
}

// outcome is what a phase reports besides an error.
type outcome struct {
	// requeueAfter asks for another reconcile after this long; zero means no timed requeue.
	requeueAfter time.Duration
	// deleted says the phase deleted the NodeClaim, so the phases after it are skipped.
	deleted bool
}

// phase is one step of the lifecycle. It reads the NodeClaim, may write other objects (the Node) and
// changes the in-memory claim; the controller writes the claim afterwards.
type phase interface {
	reconcile(ctx context.Context, nodeClaim *v1.NodeClaim) (outcome, error)
}

// NewController returns the lifecycle controller.
func NewController(deps Deps) *Controller {
	m := newMetrics(deps.Registerer)
	launches := deps.Launches
	if launches == nil {
		launches = NewLaunches(nil)
	}
	reader := deps.Reader
	if reader == nil {
		reader = deps.Client
	}
	registration := &registration{kubeClient: deps.Client, clock: deps.Clock, recorder: deps.Recorder,
		metrics: m, hints: deps.Hints, planner: deps.Planner, reader: reader, held: newHeldNodes()}
	return &Controller{
		kubeClient: deps.Client,
		reader:     reader,
		clock:      deps.Clock,
		launch: &launch{kubeClient: deps.Client, cloudProvider: deps.CloudProvider, clock: deps.Clock,
			recorder: deps.Recorder, metrics: m, cache: launches},
		registration:   registration,
		initialization: &initialization{kubeClient: deps.Client, clock: deps.Clock, written: &registration.written},
		liveness:       &liveness{kubeClient: deps.Client, clock: deps.Clock, metrics: m},
	}
}

// Name identifies the controller in logs and metrics.
func (c *Controller) Name() string { return "nodeclaim.lifecycle" }

// Register adds the provider-ID index and the controller to mgr. It watches NodeClaims and the Nodes
// that belong to them.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	if err := fieldindex.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	err := builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&v1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.nodeClaimsForNode)).
		// Nodes registration held are released together (registration.hold).
		WatchesRawSource(source.Channel(c.registration.held.wake, &handler.EnqueueRequestForObject{})).
		// Each launch waits on the cloud provider; one worker would launch a burst of claims one at a time.
		WithOptions(controller.Options{MaxConcurrentReconciles: 100}).
		Complete(c)
	if err != nil {
		return fmt.Errorf("building controller %s, %w", c.Name(), err)
	}
	return nil
}

// Reconcile runs the lifecycle phases of one NodeClaim.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nodeClaim := &v1.NodeClaim{}
	var read client.Reader = c.kubeClient
	if _, lost := c.conflicted.LoadAndDelete(req.Name); lost {
		read = c.reader
	}
	if err := read.Get(ctx, req.NamespacedName, nodeClaim); err != nil {
		if apierrors.IsNotFound(err) {
			c.forgetWritten(req.Name)
			// A claim deleted while its launch was being recorded: the instance is this controller's to end.
			if uid, created, ok := c.launch.cache.byName(req.Name); ok {
				return reconcile.Result{}, c.launch.abandon(ctx, uid, created)
			}
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting nodeclaim, %w", err)
	}
	if isTrue(nodeClaim, v1.ConditionTypeLaunched) {
		// Read back from the cache or the API server, the launch is stored: its cached result is no longer
		// needed, and the caches of the other controllers show the provider ID too. The copy this controller
		// wrote (below) says nothing of them.
		c.launch.cache.forget(nodeClaim.UID)
	}
	nodeClaim = c.written.newest(nodeClaim.Name, nodeClaim)
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodeClaim", klog.KObj(nodeClaim)))
	// Every NodeClaim is treated as managed for now: the only CloudProvider manages every nodeClassRef
	// group/kind. Once providers can coexist, filter on nodeClassRef here and in a watch predicate.
	if !nodeClaim.DeletionTimestamp.IsZero() {
		// The termination controller ends every instance the claim records; one launched but not yet recorded
		// only this controller knows about.
		created, ok := c.launch.cache.get(nodeClaim.UID)
		if ok && nodeClaim.Status.ProviderID == "" {
			return reconcile.Result{}, c.launch.abandon(ctx, nodeClaim.UID, created)
		}
		c.launch.cache.forget(nodeClaim.UID)
		c.forgetWritten(nodeClaim.Name)
		return reconcile.Result{}, nil
	}
	// 1. The finalizer goes on before anything is launched, so that no instance outlives its claim.
	if err := c.ensureFinalizer(ctx, nodeClaim); err != nil {
		return reconcile.Result{}, err
	}
	stored := nodeClaim.DeepCopy()
	// 2. Run the phases in order; the shortest requested requeue wins.
	requeueAfter, deleted, errs := c.runPhases(ctx, nodeClaim)
	// 3. Write the claim once, even when a phase failed, so that its conditions say why. A claim deleted
	// just now is left alone: the deletion changed it, and the termination controller owns it from here.
	if !deleted {
		setReady(nodeClaim, c.clock.Now())
		if err := c.write(ctx, stored, nodeClaim); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		// A conflict only means another writer (the NodeClaim's own status, a Node update) got there first:
		// read again shortly rather than report an error and back off.
		if allConflicts(errs) {
			c.conflicted.Store(req.Name, struct{}{})
			return reconcile.Result{RequeueAfter: conflictRequeue}, nil
		}
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: requeueAfter}, nil
}

// forgetWritten drops the copies written for a claim that is gone or being deleted.
func (c *Controller) forgetWritten(claim string) {
	c.written.forget(claim)
	c.registration.written.forget(claim)
}

// conflictRequeue is how soon a NodeClaim whose write lost a race is reconciled again (from
// a copy read from the API server: under load the cache lags seconds behind, and a retry from it would lose
// again).
const conflictRequeue = 100 * time.Millisecond

// allConflicts reports whether every error is a lost race (a conflict).
func allConflicts(errs []error) bool {
	for _, err := range errs {
		if err != nil && !apierrors.IsConflict(err) {
			return false
		}
	}
	return true
}

// runPhases runs launch, registration, initialization and liveness, stopping after a phase that deleted
// the claim. It returns the shortest requeue any phase asked for, whether the claim was deleted and every
// phase's error.
func (c *Controller) runPhases(ctx context.Context, nodeClaim *v1.NodeClaim) (time.Duration, bool, []error) {
	var requeueAfter time.Duration
	var errs []error
	for _, p := range []phase{c.launch, c.registration, c.initialization, c.liveness} {
		out, err := p.reconcile(ctx, nodeClaim)
		if err != nil {
			errs = append(errs, err)
		}
		if out.deleted {
			return 0, true, errs
		}
		if out.requeueAfter > 0 && (requeueAfter == 0 || out.requeueAfter < requeueAfter) {
			requeueAfter = out.requeueAfter
		}
	}
	return requeueAfter, false, errs
}

// ensureFinalizer adds the termination finalizer; the patch updates nodeClaim in place.
func (c *Controller) ensureFinalizer(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	if controllerutil.ContainsFinalizer(nodeClaim, v1.TerminationFinalizer) {
		return nil
	}
	stored := nodeClaim.DeepCopy()
	controllerutil.AddFinalizer(nodeClaim, v1.TerminationFinalizer)
	// The guard keeps a concurrent writer's finalizers: the patch replaces the whole list.
	err := fieldpatch.Patch(ctx, c.kubeClient, nodeClaim, stored, fieldpatch.Whole("metadata", "finalizers"))
	if err != nil {
		return fmt.Errorf("adding finalizer to nodeclaim, %w", err)
	}
	c.written.store(nodeClaim.Name, nodeClaim)
	return nil
}

// claimMetadata and claimStatus are the fields of a NodeClaim the lifecycle writes, and how each write is
// guarded (pkg/fieldpatch): labels and annotations entry by entry; the conditions whole, since other
// controllers set theirs in the same list; the rest of the status is the lifecycle's alone. A write loses
// only to a concurrent change of what it replaces, not to the lastPodEventTime updates and other
// controllers' writes in between that failed the optimistic lock on the whole claim.
var (
	claimMetadata = []fieldpatch.Field{fieldpatch.Keys("metadata", "labels"), fieldpatch.Keys("metadata", "annotations")}
	claimStatus   = []fieldpatch.Field{
		fieldpatch.Whole("status", "conditions"),
		fieldpatch.Unguarded("status", "nodeName"),
		fieldpatch.Unguarded("status", "providerID"),
		fieldpatch.Unguarded("status", "imageID"),
		fieldpatch.Unguarded("status", "capacity"),
		fieldpatch.Unguarded("status", "allocatable"),
	}
)

// write patches the claim's labels and annotations, then its status, each only when it changed. Metadata
// goes first: when the status write fails, the next reconcile reuses the cached launch and rewrites both,
// while a lost metadata write after a successful status write would never be repaired.
func (c *Controller) write(ctx context.Context, stored, nodeClaim *v1.NodeClaim) error {
	if !equality.Semantic.DeepEqual(stored.Labels, nodeClaim.Labels) ||
		!equality.Semantic.DeepEqual(stored.Annotations, nodeClaim.Annotations) {
		patched := stored.DeepCopy()
		patched.Labels, patched.Annotations = nodeClaim.Labels, nodeClaim.Annotations
		err := fieldpatch.Patch(ctx, c.kubeClient, patched, stored, claimMetadata...)
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("patching nodeclaim metadata, %w", err)
		}
		c.written.store(patched.Name, patched)
	}
	if equality.Semantic.DeepEqual(stored.Status, nodeClaim.Status) {
		return nil
	}
	patched := stored.DeepCopy()
	patched.Status = nodeClaim.Status
	err := fieldpatch.PatchStatus(ctx, c.kubeClient, patched, stored, claimStatus...)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching nodeclaim status, %w", err)
	}
	c.written.store(patched.Name, patched)
	return nil
}

// nodeClaimsForNode maps a Node to the NodeClaim with its provider ID, through the index Register adds.
func (c *Controller) nodeClaimsForNode(ctx context.Context, o client.Object) []reconcile.Request {
	node, ok := o.(*corev1.Node)
	if !ok || node.Spec.ProviderID == "" {
		return nil
	}
	list := &v1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, list, client.MatchingFields{ProviderIDIndex: node.Spec.ProviderID}); err != nil {
		log.FromContext(ctx).Error(err, "failed listing nodeclaims for node", "Node", klog.KObj(node))
		return nil
	}
	requests := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	if len(requests) == 0 {
		// A Node launched here can join before the claim's provider ID reaches the cache (seconds under
		// load); its claim would otherwise wait for some later event to be registered.
		if name := c.launch.cache.NodeClaimOf(node.Spec.ProviderID); name != "" {
			requests = append(requests, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
		}
	}
	return requests
}
