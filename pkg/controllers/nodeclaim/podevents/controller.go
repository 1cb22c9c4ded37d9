package podevents

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex"
)

// DedupeTimeout is the shortest time between two writes of one NodeClaim's lastPodEventTime (upstream's
// value: shorter than the 15 s consolidation validation delay, so a command decided while events were being
// de-duplicated is still caught by validation).
const DedupeTimeout = 10 * time.Second

// Deps are what the controller needs.
type Deps struct {
	// Client reads NodeClaims from the manager's cache and patches their status.
	Client client.Client
	Clock  clock.Clock
}

// Controller sets NodeClaim status.lastPodEventTime. Its requests are Node names.
type Controller struct {
	client client.Client
	clock  clock.Clock
}

// NewController returns the pod events controller.
func NewController(deps Deps) *Controller {
	return &Controller{client: deps.Client, clock: deps.Clock}
}

// Name returns the controller's name.
func (c *Controller) Name() string { return "nodeclaim.podevents" }

// Register watches pods and enqueues the node of every pod that was bound, finished, started terminating
// or was deleted.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	if err := fieldindex.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		Watches(&corev1.Pod{}, podEventHandler()).
		Complete(c)
}

// podEventHandler enqueues the node name of each pod event.
func podEventHandler() handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], pod *corev1.Pod) {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: pod.Spec.NodeName}})
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if pod, ok := e.Object.(*corev1.Pod); ok && PodEvent(nil, pod) {
				enqueue(q, pod)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, okOld := e.ObjectOld.(*corev1.Pod)
			pod, ok := e.ObjectNew.(*corev1.Pod)
			if ok && okOld && PodEvent(old, pod) {
				enqueue(q, pod)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if pod, ok := e.Object.(*corev1.Pod); ok && PodEvent(pod, nil) {
				enqueue(q, pod)
			}
		},
	}
}

// Reconcile writes the current time into the node's NodeClaim status.lastPodEventTime, unless it was written
// less than DedupeTimeout ago, in which case it comes back when the window ends.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim, err := c.claimOfNode(ctx, req.Name)
	if err != nil || claim == nil {
		return reconcile.Result{}, err
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodeClaim", klog.KObj(claim)))
	now := c.clock.Now()
	if wait := Wait(claim, now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	stored := claim.DeepCopy()
	claim.Status.LastPodEventTime = metav1.NewTime(now)
	if err := c.client.Status().Patch(ctx, claim, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching lastPodEventTime, %w", err))
	}
	return reconcile.Result{}, nil
}

// Wait is how long until the claim's lastPodEventTime may be written again: zero when it never was or
// DedupeTimeout has passed.
func Wait(claim *v1.NodeClaim, now time.Time) time.Duration {
	if claim.Status.LastPodEventTime.IsZero() {
		return 0
	}
	return max(0, claim.Status.LastPodEventTime.Add(DedupeTimeout).Sub(now))
}

// claimOfNode returns the NodeClaim whose node has the name, nil when there is none (an unmanaged node). It
// looks the claim up through the node-name index, so a pod event costs no list of every NodeClaim.
func (c *Controller) claimOfNode(ctx context.Context, nodeName string) (*v1.NodeClaim, error) {
	var claims v1.NodeClaimList
	if err := c.client.List(ctx, &claims, client.MatchingFields{fieldindex.NodeClaimNodeName: nodeName}); err != nil {
		return nil, fmt.Errorf("listing nodeclaims of node %s, %w", nodeName, err)
	}
	for i := range claims.Items {
		if claims.Items[i].Status.NodeName == nodeName && claims.Items[i].DeletionTimestamp.IsZero() {
			return &claims.Items[i], nil
		}
	}
	return nil, nil
}

// PodEvent reports whether the change from old to new (either may be nil: created, deleted) is a pod event
// for its node: the pod was bound, finished, started terminating, or was deleted while bound. DaemonSet pods
// never are.
func PodEvent(old, new *corev1.Pod) bool {
	pod := new
	if pod == nil {
		pod = old
	}
	if pod == nil || pod.Spec.NodeName == "" || ownedByDaemonSet(pod) {
		return false
	}
	switch {
	case old == nil || new == nil:
		return true
	case old.Spec.NodeName == "":
		return true
	case !terminal(old) && terminal(new):
		return true
	case old.DeletionTimestamp.IsZero() && !new.DeletionTimestamp.IsZero():
		return true
	}
	return false
}

func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func ownedByDaemonSet(pod *corev1.Pod) bool {
	owner := metav1.GetControllerOf(pod)
	return owner != nil && owner.Kind == "DaemonSet"
}
