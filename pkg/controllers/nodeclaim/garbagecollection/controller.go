package garbagecollection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
	"github.com/lathe-autoscaler/lathe/pkg/operator/poll"
)

// DefaultInterval is how often the collection runs, as in Karpenter.
const DefaultInterval = 2 * time.Minute

// orphanMinAge is how old an unclaimed instance must be before it is terminated.
const orphanMinAge = 30 * time.Second

// Deps are the controller's dependencies.
type Deps struct {
	// Client reads NodeClaims and Nodes from the manager's cache and deletes them.
	Client client.Client
	// CloudProvider lists, finds and terminates instances.
	CloudProvider cloudprovider.CloudProvider
	// Clock measures the instances' ages.
	Clock clock.Clock
	// Registerer is where the controller's metrics are registered.
	Registerer prometheus.Registerer
	// Interval between collections; DefaultInterval when zero.
	Interval time.Duration
}

// Controller collects leaked instances and NodeClaims whose instance is gone. Build it with NewController.
type Controller struct {
	kube      client.Client
	cloud     cloudprovider.CloudProvider
	clock     clock.Clock
	interval  time.Duration
	disrupted *prometheus.CounterVec
}

// NewController returns the garbage collection controller.
func NewController(deps Deps) *Controller {
	if deps.Interval == 0 {
		deps.Interval = DefaultInterval
	}
	return &Controller{
		kube:      deps.Client,
		cloud:     deps.CloudProvider,
		clock:     deps.Clock,
		interval:  deps.Interval,
		disrupted: metrics.NodeClaimsDisrupted(deps.Registerer),
	}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodeclaim.garbagecollection" }

// Register runs the collection once at start and then every interval (Reconcile requeues itself).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return poll.Register(mgr, c.Name(), c)
}

// Reconcile runs one collection and asks to run again after the interval.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	instances, err := c.cloud.List(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("listing instances, %w", err)
	}
	nodeClaims := &v1.NodeClaimList{}
	if err := c.kube.List(ctx, nodeClaims); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims, %w", err)
	}
	errInstances := c.collectInstances(ctx, instances, nodeClaims.Items)
	errNodeClaims := c.collectNodeClaims(ctx, instances, nodeClaims.Items)
	return reconcile.Result{RequeueAfter: c.interval}, errors.Join(errInstances, errNodeClaims)
}

// nodeByProviderID returns the Node with the provider ID, or nil.
func (c *Controller) nodeByProviderID(ctx context.Context, providerID string) (*corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := c.kube.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("listing nodes, %w", err)
	}
	for i := range nodes.Items {
		if nodes.Items[i].Spec.ProviderID == providerID {
			return &nodes.Items[i], nil
		}
	}
	return nil, nil
}
