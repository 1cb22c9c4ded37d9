package provisioning

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// PodController triggers the provisioner for every pod that needs capacity, event by event.
type PodController struct {
	client      client.Client
	provisioner *Provisioner
}

// NewPodController returns the controller that feeds the provisioner.
func NewPodController(c client.Client, p *Provisioner) *PodController {
	return &PodController{client: c, provisioner: p}
}

// Name identifies the controller.
func (c *PodController) Name() string { return "provisioner.trigger.pod" }

// Register watches pods that may be provisionable and adds the provisioner's loop to the manager.
func (c *PodController) Register(_ context.Context, mgr manager.Manager) error {
	if err := mgr.Add(c.provisioner); err != nil {
		return fmt.Errorf("adding provisioner to manager, %w", err)
	}
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Pod{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return pending(e.Object) },
			UpdateFunc:  func(e event.UpdateEvent) bool { return pending(e.ObjectNew) },
			DeleteFunc:  func(event.DeleteEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Complete(c)
}

// Reconcile triggers the provisioner when the pod still needs capacity, and looks again every
// podRetriggerInterval until it no longer does.
func (c *PodController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ok, _ := Provisionable(pod); !ok {
		// A pod the kube-scheduler has not tried yet is planned UntriedGrace after its creation (Plannable),
		// and then asks for capacity as one it marked unschedulable does.
		wait, untried := untriedIn(pod, c.provisioner.deps.Clock.Now(), c.provisioner.deps.PlanUntriedPods)
		switch {
		case !untried:
			return reconcile.Result{}, nil
		case wait > 0:
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	c.provisioner.Ack(req.NamespacedName)
	c.provisioner.TriggerPod(pod)
	return reconcile.Result{RequeueAfter: podRetriggerInterval}, nil
}

// podRetriggerInterval is how often a pod that still needs capacity triggers the provisioner again, as in
// Karpenter: what kept it pending (a NodePool limit, a node class not ready, capacity that ran out) may
// change without any event about the pod.
const podRetriggerInterval = 10 * time.Second

// pending is the cheap pre-filter of watch events: unbound pods only.
func pending(o client.Object) bool {
	pod, ok := o.(*corev1.Pod)
	return ok && pod.Spec.NodeName == ""
}

// NeedLeaderElection makes only the leader provision.
func (p *Provisioner) NeedLeaderElection() bool { return true }

// drainRetriggerInterval is how often a node being drained triggers the provisioner again: a pass may
// leave some of its pods unplaced (pending pods arrive while replacements come up), and nothing else
// announces that the node still holds them.
const drainRetriggerInterval = 10 * time.Second

// NodeController triggers the provisioner for nodes being drained, so that room for their pods launches
// while the drain waits on PodDisruptionBudgets rather than once the pods are evicted.
type NodeController struct {
	client      client.Client
	provisioner *Provisioner
}

// NewNodeController returns the controller that triggers the provisioner for draining nodes.
func NewNodeController(c client.Client, p *Provisioner) *NodeController {
	return &NodeController{client: c, provisioner: p}
}

// Name identifies the controller.
func (c *NodeController) Name() string { return "provisioner.trigger.node" }

// Register watches Nodes.
func (c *NodeController) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Node{}, builder.WithPredicates(predicate.NewPredicateFuncs(draining))).
		Complete(c)
}

// Reconcile triggers the provisioner while the node is being drained (being deleted, or tainted
// karpenter.sh/disrupted:NoSchedule), and looks again every drainRetriggerInterval until it is gone.
func (c *NodeController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !draining(node) {
		return reconcile.Result{}, nil
	}
	c.provisioner.Trigger(node.UID)
	return reconcile.Result{RequeueAfter: drainRetriggerInterval}, nil
}

// draining reports whether the node is being deleted or carries the disrupted taint.
func draining(o client.Object) bool {
	node, ok := o.(*corev1.Node)
	if !ok {
		return false
	}
	return node.DeletionTimestamp != nil ||
		slices.ContainsFunc(node.Spec.Taints, v1.IsDisruptedTaint)
}
