package disruption

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// Timings of the loop (upstream's).
const (
	// PollPeriod is how often the methods run.
	PollPeriod = 10 * time.Second
	// ValidationDelay is how long a consolidation or emptiness decision waits before it is checked again
	// and carried out, so that pods scheduled meanwhile are seen.
	ValidationDelay = 15 * time.Second
	// tick is how often the loop wakes to move commands on.
	tick = time.Second
	// RecheckPeriod is how long a pass that decided nothing is trusted while the cluster state's change
	// stamp stays put: until then passes are skipped (upstream does the same for consolidation); after it
	// the methods run again anyway, for what only time changes (budget windows).
	RecheckPeriod = 5 * time.Minute
)

// ClusterState is what the loop reads and marks of pkg/state.
type ClusterState interface {
	Synced(ctx context.Context) bool
	Snapshot() *state.Snapshot
	ChangeStamp() uint64
}

// Deps are what the disruption loop needs.
type Deps struct {
	// Client reads NodePools and volumes from the manager's cache and writes NodeClaims and Nodes.
	Client        client.Client
	Cluster       ClusterState
	Marker        Marker
	CloudProvider cloudprovider.CloudProvider
	Clock         clock.Clock
	Recorder      events.Recorder
	Registerer    prometheus.Registerer
	// SpotToSpotConsolidation is the feature gate of that name.
	SpotToSpotConsolidation bool
	// SolverOptions and PlanUntriedPods are the provisioner's: what the simulations assume and which
	// pending pods they leave room for.
	SolverOptions   solver.Options
	PlanUntriedPods bool
}

// Controller is the singleton disruption loop.
type Controller struct {
	deps    Deps
	methods []Method
	queue   *Queue
	metrics *collectors

	cleaned  bool
	lastPass time.Time
	pending  *pendingCommand
	// idle is set after a pass that decided nothing: the stamp it saw and when.
	idle *idlePass
}

type idlePass struct {
	stamp uint64
	at    time.Time
}

// pendingCommand is a decision waiting for its validation.
type pendingCommand struct {
	method    Method
	cmd       Command
	decidedAt time.Time
}

// NewController returns the disruption loop.
func NewController(deps Deps) *Controller {
	m := newCollectors(deps.Registerer)
	return &Controller{
		deps:    deps,
		methods: Methods(deps.SpotToSpotConsolidation, deps.SolverOptions),
		metrics: m,
		queue:   &Queue{client: deps.Client, marker: deps.Marker, clock: deps.Clock, recorder: deps.Recorder, metrics: m},
	}
}

// Name returns the controller's name.
func (c *Controller) Name() string { return "disruption" }

// Register adds the loop to the manager; it runs on the leader only.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return mgr.Add(c)
}

// NeedLeaderElection makes the loop a leader-only runnable.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start runs the loop until ctx ends, waking every tick on the injected clock.
func (c *Controller) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName(c.Name()))
	for {
		if err := c.Reconcile(ctx); err != nil {
			log.FromContext(ctx).Error(err, "disruption pass failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.deps.Clock.After(tick):
		}
	}
}

// Reconcile is one turn of the loop: move running commands on; once the state is synced, clean up after a
// restart, carry out a decision whose validation delay is over, or, every PollPeriod, decide.
func (c *Controller) Reconcile(ctx context.Context) error {
	c.queue.Reconcile(ctx)
	if !c.deps.Cluster.Synced(ctx) {
		return nil
	}
	if !c.cleaned {
		if err := c.untaintOrphans(ctx); err != nil {
			return err
		}
		c.cleaned = true
	}
	now := c.deps.Clock.Now()
	if c.pending != nil {
		if now.Sub(c.pending.decidedAt) < ValidationDelay {
			return nil
		}
		p := c.pending
		c.pending = nil
		return c.validateAndStart(ctx, p)
	}
	if now.Sub(c.lastPass) < PollPeriod {
		return nil
	}
	c.lastPass = now
	c.forgetGone()
	stamp := c.deps.Cluster.ChangeStamp()
	if c.idle != nil && c.idle.stamp == stamp && now.Sub(c.idle.at) < RecheckPeriod {
		return nil
	}
	decided, err := c.decide(ctx)
	c.idle = nil
	if err == nil && !decided {
		c.idle = &idlePass{stamp: stamp, at: now}
	}
	return err
}

// decide runs the methods and starts (or holds for validation) the first command; it reports whether
// there was one.
func (c *Controller) decide(ctx context.Context) (bool, error) {
	v, err := c.view(ctx)
	if err != nil {
		return false, err
	}
	out, err := Decide(ctx, v, c.methods)
	c.publish(ctx, v, out)
	if err != nil {
		return false, fmt.Errorf("deciding disruption, %w", err)
	}
	t := out.Decided()
	if t == nil {
		return false, nil
	}
	if t.Method.Validates() {
		c.pending = &pendingCommand{method: t.Method, cmd: t.Command, decidedAt: v.Now}
		return true, nil
	}
	return true, c.start(ctx, v, t.Command)
}

// validateAndStart checks a held command against a fresh view and starts it if it still holds.
func (c *Controller) validateAndStart(ctx context.Context, p *pendingCommand) error {
	v, err := c.view(ctx)
	if err != nil {
		return err
	}
	cmd, why, err := Validate(ctx, v, p.method, p.cmd)
	if err != nil {
		return fmt.Errorf("validating disruption command, %w", err)
	}
	if why != "" {
		c.metrics.validations.WithLabelValues(p.cmd.ConsolidationType).Inc()
		log.FromContext(ctx).Info("abandoned disruption command", "reason", why, "decision", p.cmd.Decision(), "candidates", len(p.cmd.Candidates))
		return nil
	}
	return c.start(ctx, v, cmd)
}

func (c *Controller) start(ctx context.Context, v *View, cmd Command) error {
	c.metrics.decisions.WithLabelValues(cmd.Decision(), reasonLabel(cmd.Reason), cmd.ConsolidationType).Inc()
	seen := map[string]bool{}
	for _, cand := range cmd.Candidates {
		if !seen[cand.NodePool.Name] {
			seen[cand.NodePool.Name] = true
			c.metrics.byPool.WithLabelValues(cand.NodePool.Name, cmd.Decision(), reasonLabel(cmd.Reason), cmd.ConsolidationType).Inc()
		}
	}
	if err := c.queue.Start(ctx, cmd, v.NodePools); err != nil {
		return fmt.Errorf("starting disruption command, %w", err)
	}
	return nil
}

// view reads everything a decision needs.
func (c *Controller) view(ctx context.Context) (*View, error) {
	snap := c.deps.Cluster.Snapshot()
	launchable, types, err := provisioning.ReadPools(ctx, c.deps.Client, c.deps.CloudProvider, nil)
	if err != nil {
		return nil, err
	}
	var list v1.NodePoolList
	if err := c.deps.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing nodepools, %w", err)
	}
	pools := map[string]*v1.NodePool{}
	for i := range list.Items {
		pool := &list.Items[i]
		pools[pool.Name] = pool
		if _, ok := types[pool.Name]; !ok {
			if its, err := c.deps.CloudProvider.GetInstanceTypes(ctx, pool); err == nil {
				types[pool.Name] = its
			}
		}
	}
	volumes, err := provisioning.ListVolumes(ctx, c.deps.Client)
	if err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := c.deps.Client.List(ctx, &pods); err != nil {
		return nil, fmt.Errorf("listing pods, %w", err)
	}
	now := c.deps.Clock.Now()
	return &View{
		Snapshot: snap, NodePools: pools, InstanceTypes: types, LaunchablePools: launchable,
		Volumes: volumes, Now: now, Busy: c.queue.Busy(), Pending: provisioning.PendingPods(pods.Items, now, c.deps.PlanUntriedPods),
	}, nil
}

// publish emits the pass's events and metrics.
func (c *Controller) publish(ctx context.Context, v *View, out Outcome) {
	for _, b := range out.Blocked {
		c.deps.Recorder.Publish(blockedEvent(b)...)
	}
	for _, a := range out.Invalid {
		c.deps.Recorder.Publish(invalidAnnotationEvent(a))
	}
	for _, t := range out.Trials {
		reason := reasonLabel(t.Method.Reason())
		c.metrics.eligible.WithLabelValues(reason).Set(float64(t.Eligible))
		c.metrics.evaluation.WithLabelValues(reason, t.Method.ConsolidationType()).Observe(t.Duration.Seconds())
		for name, b := range t.Budgets {
			c.metrics.allowed.WithLabelValues(name, reason).Set(float64(b.Allowed))
			c.metrics.consuming.WithLabelValues(name, reason).Set(float64(b.Disrupting))
			if b.Remaining == 0 && b.Nodes > 0 {
				c.deps.Recorder.Publish(poolBlockedEvent(v.NodePools[name], t.Method.Reason(), b))
			}
		}
		for _, b := range t.BudgetBlocked {
			c.deps.Recorder.Publish(blockedEvent(b)...)
		}
		for _, m := range t.Moves {
			c.publishMove(m)
		}
		if t.Command.TimedOut {
			c.metrics.timeouts.WithLabelValues(t.Method.ConsolidationType()).Inc()
		}
		for _, r := range t.Rejections {
			c.deps.Recorder.Publish(unconsolidatableEvent(r.Candidate, r.Message)...)
			if t.Method.Reason() == v1.DisruptionReasonUnderutilized {
				c.metrics.skipped.WithLabelValues(skipKind(r.Message)).Inc()
				if err := explain(ctx, c.deps.Client, r.Candidate, r.Message); err != nil {
					log.FromContext(ctx).Error(err, "recording why a node is kept")
				}
			}
		}
	}
}

// publishMove counts a consolidation move and, for a Balanced pool, observes its score and announces an
// approved one (as upstream: rejected moves are counted, not announced as ConsolidationApproved).
func (c *Controller) publishMove(m Move) {
	policy := string(m.NodePool.Spec.Disruption.ConsolidationPolicy)
	c.metrics.moves.WithLabelValues(approvedLabel(m.Approved), m.NodePool.Name, policy).Inc()
	if !m.Scored {
		return
	}
	c.metrics.scores.WithLabelValues(approvedLabel(m.Score.Approved()), m.NodePool.Name, policy).Observe(m.Score.Value())
	if m.Score.Approved() && m.Approved {
		c.deps.Recorder.Publish(consolidationApprovedEvents(m)...)
	}
}

func approvedLabel(ok bool) string {
	if ok {
		return "approved"
	}
	return "rejected"
}

// forgetGone drops the deletion marks of deleted candidates whose machine is gone.
func (c *Controller) forgetGone() {
	snap := c.deps.Cluster.Snapshot()
	present := map[string]bool{}
	for _, n := range snap.Nodes {
		present[n.ProviderID] = true
	}
	for _, f := range snap.InFlight {
		present[f.NodeClaim.Status.ProviderID] = true
	}
	c.queue.ForgetGone(func(id string) bool { return present[id] })
}

// untaintOrphans removes the disrupted taint from nodes a previous run tainted for a command it did not
// finish: nodes not being deleted whose claim is not being deleted either.
func (c *Controller) untaintOrphans(ctx context.Context) error {
	busy := c.queue.Busy()
	for _, n := range c.deps.Cluster.Snapshot().Nodes {
		// Not n.MarkedForDeletion: the taint itself marks a node as draining in the state.
		if n.NodeClaim == nil || n.Node.DeletionTimestamp != nil || n.NodeClaim.DeletionTimestamp != nil || busy[n.ProviderID] ||
			!slices.ContainsFunc(n.Taints, v1.IsDisruptedTaint) {
			continue
		}
		if err := Unmark(ctx, c.deps.Client, c.deps.Marker, n.Node, n.NodeClaim); err != nil {
			return fmt.Errorf("untainting node %s left by an unfinished command, %w", n.Node.Name, err)
		}
		log.FromContext(ctx).Info("untainted node left by an unfinished disruption command", "Node", klog.KObj(n.Node))
	}
	return nil
}
