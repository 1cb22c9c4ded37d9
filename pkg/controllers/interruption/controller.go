package interruption

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/poll"
	"github.com/lathe-autoscaler/lathe/pkg/events"
)

// DefaultPollInterval is how often the provider's queue is read.
const DefaultPollInterval = time.Second

// Deps are the controller's dependencies.
type Deps struct {
	// Client reads NodeClaims and Nodes from the manager's cache and deletes NodeClaims.
	Client client.Client
	// Source is the provider's interruption queue.
	Source cloudprovider.InterruptionSource
	// Clock measures how long messages waited.
	Clock clock.Clock
	// Recorder publishes the interruption events.
	Recorder events.Recorder
	// Registerer is where the controller's metrics are registered.
	Registerer prometheus.Registerer
	// PollInterval between reads of the queue; DefaultPollInterval when zero.
	PollInterval time.Duration
}

// Controller handles interruption messages. Build it with NewController.
type Controller struct {
	kube     client.Client
	source   cloudprovider.InterruptionSource
	clock    clock.Clock
	recorder events.Recorder
	interval time.Duration
	metrics  *collectors
}

// NewController returns the interruption controller.
func NewController(deps Deps) *Controller {
	if deps.PollInterval == 0 {
		deps.PollInterval = DefaultPollInterval
	}
	return &Controller{
		kube:     deps.Client,
		source:   deps.Source,
		clock:    deps.Clock,
		recorder: deps.Recorder,
		interval: deps.PollInterval,
		metrics:  newCollectors(deps.Registerer),
	}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "interruption" }

// Register runs the poll once at start and then every interval (Reconcile requeues itself).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return poll.Register(mgr, c.Name(), c)
}

// Parallelism is how many messages of one receive are handled at once (Karpenter's AWS provider handles a
// received batch with ten workers).
const Parallelism = 10

// Reconcile handles the messages of one receive, Parallelism at a time, and deletes each once it is
// handled; one whose handling failed stays in the queue for a later receive.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	messages, err := c.source.ReceiveInterruptions(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("receiving interruption messages, %w", err)
	}
	errs := make([]error, len(messages))
	workqueue.ParallelizeUntil(ctx, Parallelism, len(messages), func(i int) {
		errs[i] = c.handle(ctx, messages[i])
	})
	return reconcile.Result{RequeueAfter: c.interval}, errors.Join(errs...)
}

// handle acts on one message and deletes it from the queue.
func (c *Controller) handle(ctx context.Context, msg cloudprovider.InterruptionMessage) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("messageKind", string(msg.Kind), "providerID", msg.ProviderID))
	if msg.Err != nil {
		log.FromContext(ctx).Error(msg.Err, "failed parsing interruption message")
		return c.delete(ctx, msg.ID)
	}
	c.metrics.received.WithLabelValues(string(msg.Kind)).Inc()
	nodeClaim, node, err := c.instance(ctx, msg.ProviderID)
	if err != nil {
		return err
	}
	if nodeClaim != nil {
		c.recorder.Publish(noticeEvents(msg.Kind, nodeClaim, node)...)
		if err := c.act(ctx, msg.Kind, nodeClaim, node); err != nil {
			return err
		}
	}
	if err := c.delete(ctx, msg.ID); err != nil {
		return err
	}
	c.metrics.queueDuration.Observe(c.clock.Since(msg.Time).Seconds())
	return nil
}

// delete removes the message from the provider's queue.
func (c *Controller) delete(ctx context.Context, id string) error {
	if err := c.source.DeleteInterruption(ctx, id); err != nil {
		return fmt.Errorf("deleting interruption message, %w", err)
	}
	c.metrics.deleted.Inc()
	return nil
}

// act deletes the NodeClaim for the kinds that end the instance; its termination taints and drains the
// Node while the provisioner replaces it.
func (c *Controller) act(ctx context.Context, kind cloudprovider.InterruptionKind, nodeClaim *v1.NodeClaim, node *corev1.Node) error {
	if !replaces(kind) || !nodeClaim.DeletionTimestamp.IsZero() {
		return nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodeClaim", klog.KObj(nodeClaim)))
	if err := c.kube.Delete(ctx, nodeClaim); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting interrupted nodeclaim, %w", err))
	}
	log.FromContext(ctx).Info("deleting nodeclaim on interruption message")
	c.recorder.Publish(terminatingEvents(nodeClaim, node)...)
	c.metrics.disrupted.WithLabelValues(string(kind), nodeClaim.Labels[v1.NodePoolLabelKey], nodeClaim.Labels[v1.CapacityTypeLabelKey]).Inc()
	return nil
}

// replaces reports whether a message of the kind means the instance must be replaced.
func replaces(kind cloudprovider.InterruptionKind) bool {
	switch kind {
	case cloudprovider.InterruptionSpot, cloudprovider.InterruptionScheduledChange, cloudprovider.InterruptionStopped,
		cloudprovider.InterruptionTerminated, cloudprovider.InterruptionCapacityReservation:
		return true
	}
	return false
}

// instance returns the NodeClaim and Node with the provider ID; either may be nil, and both are for an
// empty provider ID (an instance the provider doesn't know, or a message about none).
func (c *Controller) instance(ctx context.Context, providerID string) (*v1.NodeClaim, *corev1.Node, error) {
	if providerID == "" {
		return nil, nil, nil
	}
	nodeClaims := &v1.NodeClaimList{}
	if err := c.kube.List(ctx, nodeClaims); err != nil {
		return nil, nil, fmt.Errorf("listing nodeclaims, %w", err)
	}
	var nodeClaim *v1.NodeClaim
	for i := range nodeClaims.Items {
		if nodeClaims.Items[i].Status.ProviderID == providerID {
			nodeClaim = &nodeClaims.Items[i]
		}
	}
	nodes := &corev1.NodeList{}
	if err := c.kube.List(ctx, nodes); err != nil {
		return nil, nil, fmt.Errorf("listing nodes, %w", err)
	}
	for i := range nodes.Items {
		if nodes.Items[i].Spec.ProviderID == providerID {
			return nodeClaim, &nodes.Items[i], nil
		}
	}
	return nodeClaim, nil, nil
}
