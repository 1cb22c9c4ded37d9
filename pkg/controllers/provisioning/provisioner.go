package provisioning

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
	"github.com/lathe-autoscaler/lathe/pkg/state"
)

// Deps are what the provisioner needs.
type Deps struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Reader reads straight from the API server: which pods are still unbound when a pass starts
	// (liveBindings). Nil: the cache is trusted.
	Reader client.Reader
	// Cluster is the cluster state: nodes, their pods, NodeClaims in flight, daemonsets.
	Cluster       ClusterState
	CloudProvider cloudprovider.CloudProvider
	Clock         clock.Clock
	Recorder      events.Recorder
	Registerer    prometheus.Registerer
	// BatchIdleDuration and BatchMaxDuration bound a batch of pending pods.
	BatchIdleDuration time.Duration
	BatchMaxDuration  time.Duration
	// SolverOptions carry the preference and minValues policies.
	SolverOptions solver.Options
	// PlanUntriedPods plans pods the kube-scheduler has not tried yet with the ones it marked unschedulable
	// (PLAN_UNTRIED_PODS, see Plannable).
	PlanUntriedPods bool
	// Scheduling records when pending pods are taken up and decided on (the cluster state's); nil: not
	// recorded.
	Scheduling *state.SchedulingTimes
}

// ClusterState is what the provisioner reads of pkg/state.
type ClusterState interface {
	// Synced reports whether the state reflects every Node and NodeClaim the API server has.
	Synced(ctx context.Context) bool
	// Snapshot returns a deep copy of the state.
	Snapshot() *state.Snapshot
	// Nominate records where the plan put a pending pod, so the next pass keeps it there.
	Nominate(pod *corev1.Pod, target state.Target)
	// NominationOf returns the pod's nomination while it holds.
	NominationOf(pod types.NamespacedName) (state.Nomination, bool)
}

// Provisioner turns batches of pending pods into NodeClaims.
type Provisioner struct {
	deps      Deps
	batcher   *Batcher
	metrics   *provisionerMetrics
	unplanned *unplanned
}

// NewProvisioner returns a provisioner; Start runs its loop and Trigger feeds it.
func NewProvisioner(deps Deps) *Provisioner {
	return &Provisioner{
		deps:      deps,
		batcher:   NewBatcher(deps.Clock, deps.BatchIdleDuration, deps.BatchMaxDuration),
		metrics:   newProvisionerMetrics(deps.Registerer),
		unplanned: newUnplanned(),
	}
}

// Trigger tells the provisioner that the object with the key (a draining node) may need capacity; pending
// pods come through TriggerPod.
func (p *Provisioner) Trigger(key types.UID) { p.batcher.Trigger(key) }

// TriggerPod tells the provisioner that the pending pod needs capacity. A pod a pass has planned onto a
// Node or a NodeClaim that still holds it only reminds the batcher (Batcher.Remind).
func (p *Provisioner) TriggerPod(pod *corev1.Pod) {
	p.unplanned.triggered(pod.UID)
	if p.deps.Cluster != nil {
		if _, planned := p.deps.Cluster.NominationOf(client.ObjectKeyFromObject(pod)); planned {
			p.batcher.Remind()
			return
		}
	}
	p.batcher.Trigger(pod.UID)
}

// Planning reports whether a pending pod that needs capacity waits for a pass that plans it, or the pass
// under way has not nominated the pods it took in yet. Registration holds new Nodes meanwhile.
func (p *Provisioner) Planning() bool { return p.unplanned.planning() }

// Ack records that the provisioner took the pending pod up (the first time only).
func (p *Provisioner) Ack(pod types.NamespacedName) {
	if p.deps.Scheduling != nil {
		p.deps.Scheduling.Ack(pod)
	}
}

// Start runs batches until ctx ends. A failed pass is logged and retried with the next batch; pending pods
// trigger again, so nothing is lost.
func (p *Provisioner) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("provisioner")
	for p.batcher.Wait(ctx) {
		_, err := p.Provision(log.IntoContext(ctx, logger))
		switch {
		case errors.Is(err, ErrNotSynced):
			logger.V(1).Info("waiting for cluster state to sync")
			p.batcher.TriggerNow()
		case err != nil:
			logger.Error(err, "provisioning failed")
			p.batcher.TriggerNow()
		}
	}
	return nil
}

// Provision runs one scheduling pass over the pending pods and creates the NodeClaims of the plan. It
// returns the plan.
func (p *Provisioner) Provision(ctx context.Context) (*solver.Plan, error) {
	taken := p.unplanned.startPass()
	var read map[types.UID]struct{} // stays nil unless the pass gets as far as planning
	defer func() { p.unplanned.endPass(taken, read) }()
	began := p.deps.Clock.Now()
	in, ignored, err := p.readInput(ctx)
	if err != nil {
		return nil, err
	}
	readIn := p.deps.Clock.Since(began)
	pending := pendingInput(in)
	read = unboundUIDs(pending.Pods, ignored)
	p.reportIgnored(ctx, ignored)
	done := p.metrics.startPass(len(in.Pods))
	if len(pending.Pods) > 0 {
		p.metrics.pendingZones(pending.Pods, solver.EffectiveZones(pending, p.deps.SolverOptions))
	}
	if len(in.Pods) == 0 {
		return &solver.Plan{}, nil
	}
	start := p.deps.Clock.Now()
	in, plan, was, err := p.solve(ctx, in)
	done(p.deps.Clock.Since(start))
	if err != nil {
		read = nil
		return nil, fmt.Errorf("solving for %d pending pods, %w", len(in.Pods), err)
	}
	p.metrics.unschedulable.Set(float64(len(plan.Unschedulable)))
	p.recordDecisions(in, plan)
	creating := p.deps.Clock.Now()
	created, err := p.createNodeClaims(ctx, in, plan)
	p.nominate(in, plan, created)
	p.publish(in, plan, created, was)
	observing := p.deps.Clock.Now()
	// Even when some creates failed, the next pass must count the claims that were created, or it launches
	// again for their pods.
	if err := errors.Join(err, p.awaitObserved(ctx, created)); err != nil {
		return plan, err
	}
	log.FromContext(ctx).Info("provisioned", "pendingPods", len(in.Pods), "newPendingPods", len(taken), "nodeClaims", len(created),
		"unschedulablePods", len(plan.Unschedulable), "pricePerHour", plan.PricePerHour,
		"readIn", readIn.String(), "solvedIn", creating.Sub(start).String(), "createdIn", observing.Sub(creating).String(),
		"observedIn", p.deps.Clock.Since(observing).String())
	return plan, nil
}

// recordDecisions records the pass's outcome for each unbound pending pod: placed (on a node, an in-flight
// NodeClaim or a NodeClaim of the plan) or not placeable.
func (p *Provisioner) recordDecisions(in solver.Input, plan *solver.Plan) {
	if p.deps.Scheduling == nil {
		return
	}
	unbound := map[solver.PodRef]bool{}
	for _, pod := range in.Pods {
		if pod.Spec.NodeName == "" {
			unbound[solver.PodRef{Namespace: pod.Namespace, Name: pod.Name}] = true
		}
	}
	var placed, failed []types.NamespacedName
	add := func(to *[]types.NamespacedName, ref solver.PodRef) {
		if unbound[ref] {
			*to = append(*to, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name})
		}
	}
	for _, placement := range plan.Placements {
		add(&placed, placement.Pod)
	}
	for _, planned := range plan.NodeClaims {
		for _, ref := range planned.Pods {
			add(&placed, ref)
		}
	}
	for _, u := range plan.Unschedulable {
		add(&failed, u.Pod)
	}
	p.deps.Scheduling.Decided(placed, failed)
}

// createNodeClaims creates the plan's NodeClaims, several at a time (each create costs the API server its
// CEL validation); it returns the names the API server gave them, by plan name. Every claim is attempted;
// the errors are joined.
func (p *Provisioner) createNodeClaims(ctx context.Context, in solver.Input, plan *solver.Plan) (map[string]string, error) {
	pools := map[string]*v1.NodePool{}
	for _, pool := range in.NodePools {
		pools[pool.Name] = pool
	}
	names := make([]string, len(plan.NodeClaims))
	errs := make([]error, len(plan.NodeClaims))
	workqueue.ParallelizeUntil(ctx, createParallelism, len(plan.NodeClaims), func(i int) {
		names[i], errs[i] = p.createNodeClaim(ctx, pools[plan.NodeClaims[i].NodePool], plan.NodeClaims[i])
	})
	created := map[string]string{}
	for i, planned := range plan.NodeClaims {
		if errs[i] == nil {
			created[planned.Name] = names[i]
		}
	}
	return created, errors.Join(errs...)
}

// createParallelism is how many NodeClaims are created at once. A pass's claims are launched as they are
// created: at 20 at a time, a loaded API server took 5 s over a pass of 107 claims, and the Nodes of the
// pass appeared as far apart, so that the first ones reached lifecycle.HoldLimit before the last existed.
// The client's rate limit (KUBE_CLIENT_QPS) still bounds the rate.
const createParallelism = 100

// createNodeClaim creates one planned NodeClaim and returns its name.
func (p *Provisioner) createNodeClaim(ctx context.Context, pool *v1.NodePool, planned solver.NodeClaimPlan) (string, error) {
	claim, err := NewNodeClaim(pool, planned)
	if err != nil {
		return "", err
	}
	if err := p.deps.Client.Create(ctx, claim); err != nil {
		return "", fmt.Errorf("creating nodeclaim for nodepool %s, %w", planned.NodePool, err)
	}
	p.metrics.created(planned)
	log.FromContext(ctx).Info("created nodeclaim", "NodeClaim", klog.KObj(claim), "NodePool", klog.KRef("", planned.NodePool),
		"requests", claim.Spec.Resources.Requests, "instanceTypes", len(planned.InstanceTypeNames), "pods", len(planned.Pods))
	return claim.Name, nil
}

// awaitObserved waits until the cache has seen every NodeClaim just created, so the next pass counts them
// as capacity being launched instead of launching again for the same pods.
func (p *Provisioner) awaitObserved(ctx context.Context, created map[string]string) error {
	for _, name := range created {
		if err := AwaitObserved(ctx, p.deps.Client, name); err != nil {
			return err
		}
	}
	return nil
}

// AwaitObserved waits until the reader (a cache) has the NodeClaim just created, so that whoever counts
// claims through it next does not create the same one again.
func AwaitObserved(ctx context.Context, c client.Reader, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, types.NamespacedName{Name: name}, &v1.NodeClaim{})
		return err == nil, client.IgnoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("waiting for the cache to observe nodeclaim %s, %w", name, err)
	}
	return nil
}

// nominate records where the plan put each pending pod: the existing node or in-flight NodeClaim, or the
// NodeClaim created for it. A pod on a claim that could not be created is left to the next pass.
func (p *Provisioner) nominate(in solver.Input, plan *solver.Plan, created map[string]string) {
	pods := map[solver.PodRef]*corev1.Pod{}
	for _, pod := range in.Pods {
		if pod.Spec.NodeName == "" {
			pods[solver.PodRef{Namespace: pod.Namespace, Name: pod.Name}] = pod
		}
	}
	for _, placement := range plan.Placements {
		if pod := pods[placement.Pod]; pod != nil {
			target := state.Target{Node: placement.Target}
			if placement.InFlight {
				target = state.Target{NodeClaim: placement.Target}
			}
			p.deps.Cluster.Nominate(pod, target)
		}
	}
	for _, planned := range plan.NodeClaims {
		name, ok := created[planned.Name]
		if !ok {
			continue
		}
		for _, ref := range planned.Pods {
			if pod := pods[ref]; pod != nil {
				p.deps.Cluster.Nominate(pod, state.Target{NodeClaim: name})
			}
		}
	}
}

// reportIgnored says why each ignored pod is left alone (a log line, and a FailedScheduling event unless the
// pod only avoids Lathe's nodes, which is no failure), and counts them.
func (p *Provisioner) reportIgnored(ctx context.Context, ignored []IgnoredPod) {
	p.metrics.ignored.Set(float64(len(ignored)))
	for _, i := range ignored {
		log.FromContext(ctx).V(1).Info("ignoring pod", "Pod", klog.KObj(i.Pod), "error", i.Err)
		if !errors.Is(i.Err, ErrAvoidsManagedNodes) {
			p.deps.Recorder.Publish(PodIgnoredEvent(i.Pod, i.Err))
		}
	}
}

// publish emits a Nominated event on every pod the plan found room for, but not on a regrouped pod the plan
// left where it was (was, see regroup), and a FailedScheduling event with the reasons on every pending pod it
// could not place.
func (p *Provisioner) publish(in solver.Input, plan *solver.Plan, created map[string]string, was map[solver.PodRef]place) {
	pods := map[solver.PodRef]*corev1.Pod{}
	for _, pod := range in.Pods {
		pods[solver.PodRef{Namespace: pod.Namespace, Name: pod.Name}] = pod
	}
	for _, placement := range plan.Placements {
		if pod := pods[placement.Pod]; pod != nil {
			kind := "node"
			if placement.InFlight {
				kind = "nodeclaim"
			}
			if was[placement.Pod] != (place{inFlight: placement.InFlight, name: placement.Target}) {
				p.deps.Recorder.Publish(NominatedEvent(pod, kind, placement.Target))
			}
		}
	}
	for _, planned := range plan.NodeClaims {
		name, ok := created[planned.Name]
		if !ok {
			continue
		}
		for _, ref := range planned.Pods {
			if pod := pods[ref]; pod != nil {
				p.deps.Recorder.Publish(NominatedEvent(pod, "nodeclaim", name))
			}
		}
	}
	for _, u := range plan.Unschedulable {
		// A pod still running on a node being drained is not failing to schedule; it is only placed ahead.
		if pod := pods[u.Pod]; pod != nil && pod.Spec.NodeName == "" {
			p.deps.Recorder.Publish(FailedSchedulingEvent(pod, u.Reasons))
		}
	}
}
