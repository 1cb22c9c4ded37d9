package health

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	controllerruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/events"
)

// blockedRecheckInterval is how soon a node whose repair was blocked is looked at again.
const blockedRecheckInterval = 5 * time.Minute

// Deps are the controller's dependencies.
type Deps struct {
	// Client reads Nodes and NodeClaims from the manager's cache and annotates and deletes NodeClaims.
	Client client.Client
	// CloudProvider gives the repair policies.
	CloudProvider cloudprovider.CloudProvider
	// Clock measures how long conditions have lasted.
	Clock clock.Clock
	// Recorder publishes NodeRepairBlocked.
	Recorder events.Recorder
	// Registerer is where the controller's metrics are registered.
	Registerer prometheus.Registerer
}

// Controller replaces unhealthy nodes. Build it with NewController.
type Controller struct {
	kube     client.Client
	policies []cloudprovider.RepairPolicy
	clock    clock.Clock
	recorder events.Recorder
	metrics  *collectors
}

// NewController returns the node repair controller.
func NewController(deps Deps) *Controller {
	return &Controller{
		kube:     deps.Client,
		policies: deps.CloudProvider.RepairPolicies(),
		clock:    deps.Clock,
		recorder: deps.Recorder,
		metrics:  newCollectors(deps.Registerer),
	}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "node.health" }

// Register watches Nodes, waking on changes of their conditions.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	err := controllerruntime.NewControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Node{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				before, okBefore := e.ObjectOld.(*corev1.Node)
				after, okAfter := e.ObjectNew.(*corev1.Node)
				return !okBefore || !okAfter || conditionsChanged(before, after)
			},
		})).
		Complete(c)
	if err != nil {
		return fmt.Errorf("building %s controller, %w", c.Name(), err)
	}
	return nil
}

// Reconcile replaces the node once a repair policy's toleration has run out, unless too many of its
// neighbours are unhealthy too.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	unhealthy, deadline, found := c.unhealthyCondition(node)
	if !found {
		return reconcile.Result{}, nil
	}
	if left := deadline.Sub(c.clock.Now()); left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	nodeClaim, err := c.nodeClaimOf(ctx, node)
	if err != nil || nodeClaim == nil || !nodeClaim.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, err
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("Node", klog.KObj(node), "NodeClaim", klog.KObj(nodeClaim)))
	if blocked, err := c.blocked(ctx, node, nodeClaim); err != nil || blocked {
		return reconcile.Result{RequeueAfter: blockedRecheckInterval}, err
	}
	return reconcile.Result{}, c.replace(ctx, node, nodeClaim, unhealthy)
}

// unhealthyCondition returns the node's condition that matches a repair policy and runs out first, with
// the moment it does.
func (c *Controller) unhealthyCondition(node *corev1.Node) (corev1.NodeCondition, time.Time, bool) {
	var (
		worst    corev1.NodeCondition
		deadline time.Time
		found    bool
	)
	for _, policy := range c.policies {
		condition, ok := matching(node, policy)
		if !ok {
			continue
		}
		at := condition.LastTransitionTime.Add(policy.TolerationDuration)
		if !found || at.Before(deadline) {
			worst, deadline, found = condition, at, true
		}
	}
	return worst, deadline, found
}

// unhealthy reports whether any repair policy matches the node now, however briefly.
func (c *Controller) unhealthy(node *corev1.Node) bool {
	for _, policy := range c.policies {
		if _, ok := matching(node, policy); ok {
			return true
		}
	}
	return false
}

// matching returns the node's condition the policy names if it has the policy's status.
func matching(node *corev1.Node, policy cloudprovider.RepairPolicy) (corev1.NodeCondition, bool) {
	for _, condition := range node.Status.Conditions {
		if condition.Type == policy.ConditionType {
			return condition, condition.Status == policy.ConditionStatus
		}
	}
	return corev1.NodeCondition{}, false
}

// nodeClaimOf returns the NodeClaim with the node's provider ID, or nil.
func (c *Controller) nodeClaimOf(ctx context.Context, node *corev1.Node) (*v1.NodeClaim, error) {
	if node.Spec.ProviderID == "" {
		return nil, nil
	}
	list := &v1.NodeClaimList{}
	if err := c.kube.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing nodeclaims, %w", err)
	}
	for i := range list.Items {
		if list.Items[i].Status.ProviderID == node.Spec.ProviderID {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// conditionsChanged reports whether a condition appeared, went, or changed status or transition time.
func conditionsChanged(before, after *corev1.Node) bool {
	if len(before.Status.Conditions) != len(after.Status.Conditions) {
		return true
	}
	old := make(map[corev1.NodeConditionType]corev1.NodeCondition, len(before.Status.Conditions))
	for _, condition := range before.Status.Conditions {
		old[condition.Type] = condition
	}
	for _, condition := range after.Status.Conditions {
		previous, ok := old[condition.Type]
		if !ok || previous.Status != condition.Status || !previous.LastTransitionTime.Equal(&condition.LastTransitionTime) {
			return true
		}
	}
	return false
}
