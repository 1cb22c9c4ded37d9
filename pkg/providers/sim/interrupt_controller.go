package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Annotations through which a user interrupts a simulated instance on demand, for example
//
//	kubectl annotate node <name> sim.lathe.sh/interrupt=spot_interrupted
const (
	// InterruptAnnotationKey on a Node asks the simulated cloud to interrupt its instance. The value is an
	// InterruptionKind.
	InterruptAnnotationKey = "sim.lathe.sh/interrupt"
	// InterruptedAnnotationKey records when the simulated cloud raised the interruption (RFC 3339), so that
	// it is raised once.
	InterruptedAnnotationKey = "sim.lathe.sh/interrupted-at"
)

// SpotInterruptionNotice is how long after its interruption warning EC2 reclaims a spot instance.
const SpotInterruptionNotice = 2 * time.Minute

// terminatesAfter is what the cloud does to an interrupted instance on its own: it terminates it that long
// after the interruption, or never (false). A rebalance recommendation and a scheduled change only warn;
// a stopped instance keeps its Node, which kwok keeps Ready, so the simulation only records it.
func terminatesAfter(kind InterruptionKind) (time.Duration, bool) {
	switch kind {
	case InterruptionSpot:
		return SpotInterruptionNotice, true
	case InterruptionTerminating:
		return 0, true
	}
	return 0, false
}

// interruptionKinds are the kinds the interrupt annotation takes.
var interruptionKinds = []InterruptionKind{InterruptionSpot, InterruptionRebalance, InterruptionScheduledChange, InterruptionStopping, InterruptionTerminating}

// InterruptionController plays the cloud's side of an interruption asked for with InterruptAnnotationKey:
// it raises the interruption message (CloudProvider.Interrupt) and, for a spot interruption after
// SpotInterruptionNotice and for a termination at once, terminates the instance, as EC2 does whatever
// the autoscaler makes of the message.
type InterruptionController struct {
	cloud  *CloudProvider
	client client.Client
	clock  clock.Clock
}

// NewInterruptionController returns the controller for the provider's instances. The clock defaults to
// the real one.
func NewInterruptionController(cloud *CloudProvider, kube client.Client, clk clock.Clock) *InterruptionController {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &InterruptionController{cloud: cloud, client: kube, clock: clk}
}

// Name is the controller's name in logs and metrics.
func (c *InterruptionController) Name() string { return "interruption.sim" }

// Register watches Nodes that carry the interrupt annotation.
func (c *InterruptionController) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&corev1.Node{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			_, ok := o.GetAnnotations()[InterruptAnnotationKey]
			return ok
		}))).
		Complete(c)
}

// Reconcile raises the Node's interruption once and terminates its instance when the cloud would.
func (c *InterruptionController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	kind := InterruptionKind(node.Annotations[InterruptAnnotationKey])
	if kind == "" || node.Annotations[TerminatedAnnotationKey] == "true" || node.Spec.ProviderID == "" {
		return reconcile.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("Node", klog.KObj(node), "kind", kind))
	if !slices.Contains(interruptionKinds, kind) {
		log.FromContext(ctx).Error(fmt.Errorf("unknown interruption kind %q", kind), "ignoring interrupt annotation", "known", interruptionKinds)
		return reconcile.Result{}, nil
	}
	raised, err := c.raise(ctx, node, kind)
	if cloudprovider.IsNodeClaimNotFoundError(err) {
		// Not an instance of this simulation (or already gone): nothing to interrupt, and retrying won't help.
		log.FromContext(ctx).Info("ignoring interrupt annotation on a node that is no simulated instance")
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	after, terminates := terminatesAfter(kind)
	if !terminates {
		return reconcile.Result{}, nil
	}
	if wait := raised.Add(after).Sub(c.clock.Now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	log.FromContext(ctx).Info("terminating interrupted instance")
	return reconcile.Result{}, c.cloud.terminate(ctx, node)
}

// raise sends the interruption message the first time and returns when it was raised.
func (c *InterruptionController) raise(ctx context.Context, node *corev1.Node, kind InterruptionKind) (time.Time, error) {
	if at, err := time.Parse(time.RFC3339, node.Annotations[InterruptedAnnotationKey]); err == nil {
		return at, nil
	}
	now := c.clock.Now()
	// The message goes out before the Node records it: a crash in between raises it again after the restart,
	// as a real queue may deliver a message twice, but never loses it.
	stored := node.DeepCopy()
	node.Annotations[InterruptedAnnotationKey] = now.UTC().Format(time.RFC3339)
	if err := c.cloud.Interrupt(ctx, node.Spec.ProviderID, kind); err != nil {
		return time.Time{}, fmt.Errorf("interrupting instance, %w", err)
	}
	if err := c.client.Patch(ctx, node, client.MergeFrom(stored)); err != nil {
		return time.Time{}, fmt.Errorf("recording the interruption on node, %w", err)
	}
	log.FromContext(ctx).Info("raised interruption")
	return now, nil
}
