package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/fieldpatch"
)

// ReplacementTimeout is how long a command waits for its replacements to initialize before it gives up
// and leaves its candidates alone (upstream's orchestration queue retries for 10 minutes).
const ReplacementTimeout = 10 * time.Minute

// unobservedGrace is how long a replacement just created may be missing from the cache before it counts
// as deleted.
const unobservedGrace = 30 * time.Second

// Marker records which nodes disruption has claimed, so the simulator stops placing pods on them
// (pkg/state DeletionMarks).
type Marker interface {
	Mark(providerIDs ...string)
	Unmark(providerIDs ...string)
}

// Queue carries out commands: it taints and marks the candidates, launches the replacements, waits for
// them to initialize, and then deletes the candidates' NodeClaims (the termination controllers drain the
// nodes). If a replacement fails, the candidates are untainted and unmarked and nothing is lost.
type Queue struct {
	client   client.Client
	marker   Marker
	clock    clock.Clock
	recorder events.Recorder
	metrics  *collectors

	mu      sync.Mutex
	running []*running
	deleted map[string]bool // provider IDs of candidates deleted and still marked
}

// running is a replace command waiting for its replacements.
type running struct {
	cmd          Command
	replacements []string
	started      time.Time
}

// Busy returns the provider IDs of the candidates of running commands.
func (q *Queue) Busy() map[string]bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := map[string]bool{}
	for _, r := range q.running {
		for _, c := range r.cmd.Candidates {
			out[c.ProviderID] = true
		}
	}
	return out
}

// Start begins a command: candidates are marked first, so that no pod is scheduled to them while their
// replacements launch; a delete command deletes them at once.
func (q *Queue) Start(ctx context.Context, cmd Command, pools map[string]*v1.NodePool) error {
	if err := q.markAll(ctx, cmd); err != nil {
		q.fail(ctx, cmd, err)
		return err
	}
	if len(cmd.Replacements) == 0 {
		return q.deleteCandidates(ctx, cmd)
	}
	r := &running{cmd: cmd, started: q.clock.Now()}
	for _, plan := range cmd.Replacements {
		claim, err := provisioning.NewNodeClaim(pools[plan.NodePool], plan)
		if err == nil {
			err = q.client.Create(ctx, claim)
		}
		if err != nil {
			err = fmt.Errorf("creating replacement nodeclaim, %w", err)
			q.fail(ctx, cmd, err)
			return err
		}
		r.replacements = append(r.replacements, claim.Name)
		q.recorder.Publish(launchingEvent(claim, cmd.Reason))
		log.FromContext(ctx).Info("launched replacement", "NodeClaim", klog.KObj(claim), "instanceTypes", len(plan.InstanceTypeNames), "pricePerHour", plan.PricePerHour)
	}
	q.mu.Lock()
	q.running = append(q.running, r)
	q.mu.Unlock()
	return nil
}

// Reconcile moves the running commands on: those whose replacements are all initialized delete their
// candidates; those with a replacement gone or too slow give up.
func (q *Queue) Reconcile(ctx context.Context) {
	q.mu.Lock()
	pending := slices.Clone(q.running)
	q.mu.Unlock()
	for _, r := range pending {
		done, err := q.advance(ctx, r)
		if !done {
			continue
		}
		q.mu.Lock()
		q.running = slices.DeleteFunc(q.running, func(x *running) bool { return x == r })
		q.mu.Unlock()
		if err != nil {
			q.fail(ctx, r.cmd, err)
			continue
		}
		if err := q.deleteCandidates(ctx, r.cmd); err != nil {
			log.FromContext(ctx).Error(err, "deleting disruption candidates")
		}
	}
}

// advance reports whether the command is finished waiting, and the error if it failed.
func (q *Queue) advance(ctx context.Context, r *running) (bool, error) {
	now := q.clock.Now()
	ready := true
	for _, name := range r.replacements {
		claim := &v1.NodeClaim{}
		err := q.client.Get(ctx, types.NamespacedName{Name: name}, claim)
		switch {
		case apierrors.IsNotFound(err) && now.Sub(r.started) < unobservedGrace:
			ready = false
		case apierrors.IsNotFound(err) || (err == nil && !claim.DeletionTimestamp.IsZero()):
			return true, fmt.Errorf("replacement nodeclaim %s was deleted", name)
		case err != nil:
			return false, nil
		case !meta.IsStatusConditionTrue(claim.Status.Conditions, v1.ConditionTypeInitialized):
			ready = false
			q.recorder.Publish(waitingReadinessEvent(claim))
		}
	}
	if ready {
		return true, nil
	}
	if now.Sub(r.started) > ReplacementTimeout {
		return true, fmt.Errorf("replacements not initialized after %s", ReplacementTimeout)
	}
	return false, nil
}

// ForgetGone unmarks the deleted candidates whose machine the state no longer has (present says whether it
// does), so marks do not outlive their nodes.
func (q *Queue) ForgetGone(present func(providerID string) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for id := range q.deleted {
		if !present(id) {
			q.marker.Unmark(id)
			delete(q.deleted, id)
		}
	}
}

// markAll taints, marks and labels every candidate with the disruption reason.
func (q *Queue) markAll(ctx context.Context, cmd Command) error {
	for _, c := range cmd.Candidates {
		q.marker.Mark(c.ProviderID)
		if err := setTaint(ctx, q.client, c.Node, true); err != nil {
			return err
		}
		if err := q.setReasonCondition(ctx, c.NodeClaim, cmd.Reason); err != nil {
			return err
		}
	}
	return nil
}

// fail undoes a command's marks and counts the failure.
func (q *Queue) fail(ctx context.Context, cmd Command, cause error) {
	log.FromContext(ctx).Error(cause, "disruption command failed; leaving its nodes", "decision", cmd.Decision(), "reason", cmd.Reason)
	q.metrics.failures.WithLabelValues(cmd.Decision(), reasonLabel(cmd.Reason), cmd.ConsolidationType).Inc()
	for _, c := range cmd.Candidates {
		if err := Unmark(ctx, q.client, q.marker, c.Node, c.NodeClaim); err != nil {
			log.FromContext(ctx).Error(err, "unmarking disruption candidate", "Node", klog.KObj(c.Node))
		}
	}
}

// deleteCandidates deletes the candidates' NodeClaims; the termination controllers drain their nodes.
func (q *Queue) deleteCandidates(ctx context.Context, cmd Command) error {
	var errs []error
	for _, c := range cmd.Candidates {
		if err := q.client.Delete(ctx, c.NodeClaim); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s, %w", c.NodeClaim.Name, err))
			continue
		}
		q.mu.Lock()
		if q.deleted == nil {
			q.deleted = map[string]bool{}
		}
		q.deleted[c.ProviderID] = true
		q.mu.Unlock()
		q.recorder.Publish(terminatingEvents(c, cmd.Reason)...)
		q.metrics.disrupted.WithLabelValues(reasonLabel(cmd.Reason), c.NodePool.Name, c.CapacityType).Inc()
		log.FromContext(ctx).Info("disrupting node", "Node", klog.KObj(c.Node), "NodeClaim", klog.KObj(c.NodeClaim),
			"reason", cmd.Reason, "decision", cmd.Decision(), "savingsPerHour", cmd.SavingsPerHour)
	}
	return errors.Join(errs...)
}

// setReasonCondition records on the claim why it is being disrupted (the termination controllers label
// their metrics with it).
func (q *Queue) setReasonCondition(ctx context.Context, snapshot *v1.NodeClaim, reason v1.DisruptionReason) error {
	claim := &v1.NodeClaim{}
	if err := q.client.Get(ctx, client.ObjectKeyFromObject(snapshot), claim); err != nil {
		return fmt.Errorf("getting nodeclaim, %w", err)
	}
	stored := claim.DeepCopy()
	meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{
		Type: v1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue, Reason: string(reason),
		ObservedGeneration: claim.Generation, LastTransitionTime: metav1.NewTime(q.clock.Now()),
	})
	if err := fieldpatch.PatchStatus(ctx, q.client, claim, stored, fieldpatch.Whole("status", "conditions")); err != nil {
		return fmt.Errorf("setting the disruption reason of nodeclaim %s, %w", claim.Name, err)
	}
	return nil
}

// Unmark removes the disrupted taint from the node, the DisruptionReason condition from its claim and the
// node's deletion mark.
func Unmark(ctx context.Context, c client.Client, marker Marker, node *corev1.Node, claim *v1.NodeClaim) error {
	if err := setTaint(ctx, c, node, false); client.IgnoreNotFound(err) != nil {
		return err
	}
	if claim != nil {
		latest := &v1.NodeClaim{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(claim), latest); err != nil {
			return client.IgnoreNotFound(fmt.Errorf("getting nodeclaim, %w", err))
		}
		stored := latest.DeepCopy()
		if meta.RemoveStatusCondition(&latest.Status.Conditions, v1.ConditionTypeDisruptionReason) {
			if err := fieldpatch.PatchStatus(ctx, c, latest, stored, fieldpatch.Whole("status", "conditions")); err != nil {
				return client.IgnoreNotFound(fmt.Errorf("clearing the disruption reason of nodeclaim %s, %w", claim.Name, err))
			}
		}
		marker.Unmark(latest.Status.ProviderID)
	}
	marker.Unmark(node.Spec.ProviderID)
	return nil
}

// setTaint adds or removes the karpenter.sh/disrupted:NoSchedule taint on the node, guarded by the taints
// it replaces (pkg/fieldpatch): a label or status written since the copy it read doesn't make it fail.
func setTaint(ctx context.Context, c client.Client, node *corev1.Node, on bool) error {
	latest := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(node), latest); err != nil {
		return fmt.Errorf("getting node, %w", err)
	}
	has := slices.ContainsFunc(latest.Spec.Taints, v1.IsDisruptedTaint)
	if has == on {
		return nil
	}
	stored := latest.DeepCopy()
	if on {
		latest.Spec.Taints = append(latest.Spec.Taints, v1.DisruptedNoScheduleTaint)
	} else {
		latest.Spec.Taints = slices.DeleteFunc(latest.Spec.Taints, v1.IsDisruptedTaint)
	}
	if err := fieldpatch.Patch(ctx, c, latest, stored, fieldpatch.Whole("spec", "taints")); err != nil {
		return fmt.Errorf("patching the disrupted taint of node %s, %w", node.Name, err)
	}
	return nil
}
