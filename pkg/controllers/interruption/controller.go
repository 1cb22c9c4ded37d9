package interruption

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/operator/poll"
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
	handler
	source   cloudprovider.InterruptionSource
	interval time.Duration
	metrics  *collectors
}

// NewController returns the interruption controller.
func NewController(deps Deps) *Controller {
	if deps.PollInterval == 0 {
		deps.PollInterval = DefaultPollInterval
	}
	metrics := newCollectors(deps.Registerer)
	return &Controller{
		handler:  handler{kube: deps.Client, clock: deps.Clock, recorder: deps.Recorder, disrupted: metrics.disrupted},
		source:   deps.Source,
		interval: deps.PollInterval,
		metrics:  metrics,
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
		if err := c.interrupt(ctx, msg.Kind, nodeClaim, node); err != nil {
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
