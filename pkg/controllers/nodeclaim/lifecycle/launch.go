package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/events"
	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// ReasonLaunchFailed is the reason of Launched=Unknown after a launch error the provider gave no reason for.
const ReasonLaunchFailed = "LaunchFailed"

// launch calls CloudProvider.Create once per claim and copies the result onto it.
type launch struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
	recorder      events.Recorder
	metrics       *lifecycleMetrics
	cache         *Launches
}

func (l *launch) reconcile(ctx context.Context, nodeClaim *v1.NodeClaim) (outcome, error) {
	if isTrue(nodeClaim, v1.ConditionTypeLaunched) {
		return outcome{}, nil // the launch is kept until a read shows it stored (Controller.Reconcile)
	}
	created, err := l.create(ctx, nodeClaim)
	if err != nil {
		return l.failed(ctx, nodeClaim, err)
	}
	populate(nodeClaim, created)
	setTrue(nodeClaim, l.clock.Now(), v1.ConditionTypeLaunched)
	return outcome{}, nil
}

// create returns the cached launch of the claim or calls CloudProvider.Create and caches its result, so
// that a claim whose status write failed is never launched twice.
func (l *launch) create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	if created, ok := l.cache.get(nodeClaim.UID); ok {
		return created, nil
	}
	created, err := l.cloudProvider.Create(ctx, nodeClaim.DeepCopy())
	if err != nil {
		return nil, err
	}
	l.cache.put(nodeClaim.UID, nodeClaim.Name, created)
	l.metrics.launched.WithLabelValues(nodePoolOf(nodeClaim)).Inc()
	log.FromContext(ctx).Info("launched nodeclaim",
		"providerID", created.Status.ProviderID,
		"instanceType", created.Labels[v1.LabelInstanceType],
		"zone", created.Labels[v1.LabelTopologyZone],
		"capacityType", created.Labels[v1.CapacityTypeLabelKey],
		"allocatable", created.Status.Allocatable)
	return created, nil
}

// failed handles a Create error: a claim that can't be launched (no capacity, node class not ready) is
// deleted so that its pods are planned again; any other error sets Launched=Unknown and is retried.
func (l *launch) failed(ctx context.Context, nodeClaim *v1.NodeClaim, err error) (outcome, error) {
	switch {
	case cloudprovider.IsInsufficientCapacityError(err):
		l.recorder.Publish(InsufficientCapacityErrorEvent(nodeClaim, err))
		return l.delete(ctx, nodeClaim, err, DisruptedReasonInsufficientCapacity)
	case cloudprovider.IsNodeClassNotReadyError(err):
		l.recorder.Publish(NodeClassNotReadyEvent(nodeClaim, err))
		return l.delete(ctx, nodeClaim, err, DisruptedReasonNodeClassNotReady)
	}
	reason, message := ReasonLaunchFailed, err.Error()
	var createErr *cloudprovider.CreateError
	if errors.As(err, &createErr) && createErr.ConditionReason != "" {
		reason, message = createErr.ConditionReason, createErr.Message
	}
	setUnknown(nodeClaim, l.clock.Now(), v1.ConditionTypeLaunched, reason, message)
	return outcome{}, fmt.Errorf("launching nodeclaim, %w", err)
}

// abandon terminates the instance cached for a claim that was deleted before its launch was recorded on
// it (the NodeClaim termination controller, seeing no provider ID, takes such a claim for never launched),
// then forgets it. When Delete fails the launch stays cached, and the error's retry tries again.
func (l *launch) abandon(ctx context.Context, uid types.UID, created *v1.NodeClaim) error {
	err := l.cloudProvider.Delete(ctx, created)
	if err != nil && !cloudprovider.IsNodeClaimNotFoundError(err) {
		return fmt.Errorf("terminating the instance of a nodeclaim deleted while launching, %w", err)
	}
	l.cache.forget(uid)
	log.FromContext(ctx).Info("terminated the instance of a nodeclaim deleted while launching", "providerID", created.Status.ProviderID)
	return nil
}

// delete deletes a claim that can't be launched.
func (l *launch) delete(ctx context.Context, nodeClaim *v1.NodeClaim, cause error, reason string) (outcome, error) {
	log.FromContext(ctx).Error(cause, "failed launching nodeclaim, deleting it")
	if err := deleteNodeClaim(ctx, l.kubeClient, nodeClaim); err != nil {
		return outcome{}, err
	}
	l.cache.forget(nodeClaim.UID)
	l.metrics.countDisrupted(nodeClaim, reason)
	return outcome{deleted: true}, nil
}

// populate copies what Create reports onto the claim: the provider and image IDs, capacity, allocatable,
// the labels of single-valued requirements and the labels and annotations of the instance.
func populate(nodeClaim, created *v1.NodeClaim) {
	labels := requirementLabels(nodeClaim)
	maps.Copy(labels, nodeClaim.Labels)
	maps.Copy(labels, created.Labels)
	nodeClaim.Labels = labels
	if len(created.Annotations) > 0 {
		if nodeClaim.Annotations == nil {
			nodeClaim.Annotations = map[string]string{}
		}
		maps.Copy(nodeClaim.Annotations, created.Annotations)
	}
	nodeClaim.Status.ProviderID = created.Status.ProviderID
	nodeClaim.Status.ImageID = created.Status.ImageID
	nodeClaim.Status.Capacity = created.Status.Capacity.DeepCopy()
	nodeClaim.Status.Allocatable = created.Status.Allocatable.DeepCopy()
}

// requirementLabels returns the labels the claim's requirements pin to one value, leaving out labels
// only the kubelet or Karpenter may set.
func requirementLabels(nodeClaim *v1.NodeClaim) map[string]string {
	out := map[string]string{}
	reqs, err := scheduling.FromNodePoolRequirements(nodeClaim.Spec.Requirements)
	if err != nil {
		// The API server validated the requirements; an unparsable one just contributes no label.
		return out
	}
	for k, v := range reqs.Labels() {
		if restricted, _ := v1.IsRestrictedLabel(k); restricted && k != v1.NodePoolLabelKey {
			continue
		}
		out[k] = v
	}
	return out
}

// deleteNodeClaim deletes the claim, if it is still the same object.
func deleteNodeClaim(ctx context.Context, kubeClient client.Client, nodeClaim *v1.NodeClaim) error {
	if err := kubeClient.Delete(ctx, nodeClaim, client.Preconditions{UID: &nodeClaim.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting nodeclaim, %w", err)
	}
	return nil
}

// Launches keeps the result of CloudProvider.Create per NodeClaim UID until Launched is stored, so that a
// claim whose status write failed is never launched twice. It also tells other controllers of this process
// the provider ID of a claim launched here before their cache has it (ProviderIDOf).
type Launches struct {
	mu       sync.Mutex
	entries  map[types.UID]launchEntry
	uids     map[string]types.UID // by NodeClaim name, to forget claims that are gone
	observer LaunchObserver
}

// LaunchObserver hears of each launch as CloudProvider.Create returns it: the cluster state, which joins the
// claim and its Node by the provider ID before the claim's status reaches its informer (state.NodeStore).
type LaunchObserver interface {
	Launched(nodeClaim, providerID string)
}

type launchEntry struct {
	name    string
	created *v1.NodeClaim
}

// NewLaunches returns an empty cache that tells observer, when not nil, of each launch put in it.
func NewLaunches(observer LaunchObserver) *Launches {
	return &Launches{entries: map[types.UID]launchEntry{}, uids: map[string]types.UID{}, observer: observer}
}

// ProviderIDOf returns the provider ID of the named NodeClaim if this process launched it and has not yet
// read its Launched condition back; empty otherwise. Under load a NodeClaim's status update reaches the
// caches seconds after it is written, while its Node may already be there.
func (c *Launches) ProviderIDOf(nodeClaim string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[c.uids[nodeClaim]]; ok {
		return e.created.Status.ProviderID
	}
	return ""
}

// NodeClaimOf returns the name of the NodeClaim this process launched as the instance providerID, while
// its Launched condition has yet to be read back; empty otherwise. It is ProviderIDOf the other way round,
// for a Node that joins before the cache shows its claim's provider ID.
func (c *Launches) NodeClaimOf(providerID string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.created.Status.ProviderID == providerID {
			return e.name
		}
	}
	return ""
}

func (c *Launches) get(uid types.UID) (*v1.NodeClaim, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[uid]
	if !ok {
		return nil, false
	}
	return e.created.DeepCopy(), true
}

func (c *Launches) put(uid types.UID, name string, created *v1.NodeClaim) {
	c.mu.Lock()
	c.entries[uid] = launchEntry{name: name, created: created.DeepCopy()}
	c.uids[name] = uid
	c.mu.Unlock()
	if c.observer != nil {
		c.observer.Launched(name, created.Status.ProviderID)
	}
}

func (c *Launches) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[uid]; ok {
		delete(c.uids, e.name)
		delete(c.entries, uid)
	}
}

// byName returns the UID and launch cached for a claim that is gone, whose UID is no longer known.
func (c *Launches) byName(name string) (types.UID, *v1.NodeClaim, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uid, ok := c.uids[name]
	if !ok {
		return "", nil, false
	}
	return uid, c.entries[uid].created.DeepCopy(), true
}
