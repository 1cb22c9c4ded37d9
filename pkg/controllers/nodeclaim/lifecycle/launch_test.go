package lifecycle_test

import (
	"time"

	"context"
	"errors"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/lifecycle"
	"github.com/lathe-autoscaler/lathe/pkg/events"
)

// failingStatusClient fails the next statusFailures status patches.
type failingStatusClient struct {
	client.Client
	statusFailures *atomic.Int32
}

func (c failingStatusClient) Status() client.SubResourceWriter {
	return failingStatusWriter{SubResourceWriter: c.Client.Status(), failures: c.statusFailures}
}

type failingStatusWriter struct {
	client.SubResourceWriter
	failures *atomic.Int32
}

func (w failingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if w.failures.Add(-1) >= 0 {
		return errors.New("injected status write failure")
	}
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

var _ = Describe("Finalizer", func() {
	It("adds the termination finalizer before launching", func() {
		nc := newNodeClaim()
		expectReconciled(nc)
		Expect(get(nc).Finalizers).To(ContainElement(v1.TerminationFinalizer))
		Expect(cp.CreateCalls()).To(HaveLen(1))
		Expect(cp.CreateCalls()[0].Finalizers).To(ContainElement(v1.TerminationFinalizer))
	})
	It("ignores claims that are being deleted", func() {
		nc := newNodeClaim(func(nc *v1.NodeClaim) { nc.Finalizers = []string{v1.TerminationFinalizer} })
		Expect(kubeClient.Delete(ctx, nc)).To(Succeed())
		expectReconciled(nc)
		Expect(cp.Calls(fake.MethodCreate)).To(BeZero())
	})
	It("ignores claims that are gone", func() {
		nc := newNodeClaim()
		Expect(kubeClient.Delete(ctx, nc)).To(Succeed())
		Expect(expectReconciled(nc).RequeueAfter).To(BeZero())
	})
})

var _ = Describe("Launch", func() {
	It("copies the launch result onto the claim and sets Launched", func() {
		nc := launched()
		Expect(nc.Status.ProviderID).To(HavePrefix("fake:///test-zone-1a/"))
		Expect(nc.Status.Capacity.Cpu().String()).To(Equal("2"))
		Expect(nc.Status.Allocatable).To(HaveKey(corev1.ResourceMemory))
		Expect(nc.Labels).To(HaveKeyWithValue(v1.LabelInstanceType, "m5.large"))
		Expect(nc.Labels).To(HaveKeyWithValue(v1.LabelTopologyZone, "test-zone-1a"))
		Expect(nc.Labels).To(HaveKeyWithValue(v1.CapacityTypeLabelKey, v1.CapacityTypeOnDemand))
		Expect(nc.Labels).To(HaveKeyWithValue(v1.LabelArch, "amd64"))
		Expect(nc.Labels).To(HaveKeyWithValue("example.com/team", "blue"))
		Expect(nc.Labels).To(HaveKeyWithValue(v1.NodePoolLabelKey, "default"))
		Expect(condition(nc, v1.ConditionTypeLaunched).Reason).To(Equal(v1.ConditionTypeLaunched))
		Expect(counter("karpenter_nodeclaims_launched_total", map[string]string{"nodepool": "default"})).To(Equal(1.0))
	})
	It("doesn't launch again once Launched", func() {
		nc := launched()
		expectReconciled(nc)
		expectReconciled(nc)
		Expect(cp.Calls(fake.MethodCreate)).To(Equal(1))
	})
	It("builds on its own write while the cache still shows the claim from before it", func() {
		nc := newNodeClaim()
		cache := &laggingCache{Client: kubeClient, claim: get(nc)} // never catches up with the launch
		reads := &readCounter[*v1.NodeClaim]{Reader: kubeClient}
		controller = newController(cache, readingFrom(reads))
		expectReconciled(nc)
		Expect(condition(get(nc), v1.ConditionTypeLaunched).Status).To(Equal(metav1.ConditionTrue))
		launchedVersion := get(nc).ResourceVersion

		Expect(expectReconciled(nc).RequeueAfter).To(BeNumerically(">", time.Second), "no write lost to the controller's own")
		expectReconciled(nc)
		Expect(reads.count).To(BeZero())
		Expect(get(nc).ResourceVersion).To(Equal(launchedVersion), "nothing written again")
		Expect(cp.Calls(fake.MethodCreate)).To(Equal(1))
	})
	It("tells the provider ID of its launch until a read shows the launch stored", func() {
		nc := newNodeClaim()
		cache := &laggingCache{Client: kubeClient, claim: get(nc)}
		launches := lifecycle.NewLaunches(nil)
		controller = newController(cache, func(d *lifecycle.Deps) { d.Launches = launches })
		expectReconciled(nc)
		providerID := get(nc).Status.ProviderID
		Expect(providerID).NotTo(BeEmpty())

		expectReconciled(nc) // from the controller's own write: the cache has yet to show it
		Expect(launches.ProviderIDOf(nc.Name)).To(Equal(providerID), "the other controllers' caches lag as well")
		Expect(launches.NodeClaimOf(providerID)).To(Equal(nc.Name))

		cache.claim = get(nc)
		expectReconciled(nc)
		Expect(launches.ProviderIDOf(nc.Name)).To(BeEmpty())
		Expect(launches.NodeClaimOf(providerID)).To(BeEmpty())
	})
	It("reconciles the claim of a Node that joins before the cache shows the claim's provider ID", func() {
		nc := newNodeClaim()
		cache := &laggingCache{Client: kubeClient, claim: get(nc)}
		controller = newController(cache)
		expectReconciled(nc)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "joined"}, Spec: corev1.NodeSpec{ProviderID: get(nc).Status.ProviderID}}
		Expect(controller.NodeClaimsForNode(ctx, node)).To(ConsistOf(reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}))

		other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: corev1.NodeSpec{ProviderID: "fake:///test-zone-1a/other"}}
		Expect(controller.NodeClaimsForNode(ctx, other)).To(BeEmpty())
	})
	It("never launches twice for one claim when the status write fails", func() {
		failures := &atomic.Int32{}
		failures.Store(2)
		controller = newController(failingStatusClient{Client: kubeClient, statusFailures: failures})
		nc := newNodeClaim()
		_, err := reconcileNodeClaim(nc)
		Expect(err).To(MatchError(ContainSubstring("injected status write failure")))
		Expect(get(nc).Status.ProviderID).To(BeEmpty())
		_, err = reconcileNodeClaim(nc)
		Expect(err).To(HaveOccurred())
		expectReconciled(nc)
		Expect(cp.Calls(fake.MethodCreate)).To(Equal(1))
		stored := get(nc)
		Expect(stored.Status.ProviderID).To(Equal("fake:///test-zone-1a/1"))
		Expect(stored.Labels).To(HaveKeyWithValue(v1.LabelInstanceType, "m5.large"))
		Expect(condition(stored, v1.ConditionTypeLaunched).Status).To(Equal(metav1.ConditionTrue))
		Expect(counter("karpenter_nodeclaims_launched_total", map[string]string{"nodepool": "default"})).To(Equal(1.0))
	})
	It("terminates the instance of a claim deleted before its launch was recorded", func() {
		failures := &atomic.Int32{}
		failures.Store(1)
		controller = newController(failingStatusClient{Client: kubeClient, statusFailures: failures})
		nc := newNodeClaim()
		_, err := reconcileNodeClaim(nc)
		Expect(err).To(MatchError(ContainSubstring("injected status write failure")))
		Expect(cp.Calls(fake.MethodCreate)).To(Equal(1))
		// The termination controller, seeing no provider ID, releases the claim at once.
		stored := get(nc)
		stored.Finalizers = nil
		Expect(kubeClient.Update(ctx, stored)).To(Succeed())
		Expect(kubeClient.Delete(ctx, stored)).To(Succeed())

		expectReconciled(nc)
		Expect(cp.DeleteCalls()).To(HaveLen(1))
		Expect(cp.DeleteCalls()[0].Status.ProviderID).To(Equal("fake:///test-zone-1a/1"))
		_, err = cp.Get(ctx, "fake:///test-zone-1a/1")
		Expect(cloudprovider.IsNodeClaimNotFoundError(err)).To(BeTrue(), "got %v", err)
		expectReconciled(nc)
		Expect(cp.DeleteCalls()).To(HaveLen(1), "forgotten once terminated")
	})
	It("terminates the unrecorded instance of a claim that is being deleted", func() {
		failures := &atomic.Int32{}
		failures.Store(1)
		controller = newController(failingStatusClient{Client: kubeClient, statusFailures: failures})
		nc := newNodeClaim()
		_, err := reconcileNodeClaim(nc)
		Expect(err).To(HaveOccurred())
		Expect(kubeClient.Delete(ctx, get(nc))).To(Succeed()) // the finalizer keeps it while it terminates

		expectReconciled(nc)
		Expect(cp.DeleteCalls()).To(HaveLen(1))
		Expect(cp.Calls(fake.MethodCreate)).To(Equal(1))
	})
	It("deletes the claim and publishes an event on insufficient capacity", func() {
		cp.InjectError(fake.MethodCreate, cloudprovider.NewInsufficientCapacityError(errors.New("no m5.large in test-zone-1a")))
		nc := newNodeClaim()
		expectReconciled(nc)
		expectDeleting(nc)
		evts := recorder.WithReason(lifecycle.EventReasonInsufficientCapacity)
		Expect(evts).To(HaveLen(1))
		Expect(evts[0].Type).To(Equal(events.Warning))
		Expect(evts[0].Message).To(ContainSubstring("no m5.large in test-zone-1a"))
		Expect(counter("karpenter_nodeclaims_disrupted_total", map[string]string{"reason": "insufficient_capacity", "nodepool": "default"})).To(Equal(1.0))
	})
	It("deletes the claim and publishes an event when the node class isn't ready", func() {
		cp.InjectError(fake.MethodCreate, cloudprovider.NewNodeClassNotReadyError(errors.New("no subnets")))
		nc := newNodeClaim()
		expectReconciled(nc)
		expectDeleting(nc)
		Expect(recorder.WithReason(lifecycle.EventReasonNodeClassNotReady)).To(HaveLen(1))
		Expect(counter("karpenter_nodeclaims_disrupted_total", map[string]string{"reason": "nodeclass_not_ready", "nodepool": "default"})).To(Equal(1.0))
	})
	It("sets Launched=Unknown and retries on other errors", func() {
		cp.InjectError(fake.MethodCreate, errors.New("throttled"))
		nc := newNodeClaim()
		_, err := reconcileNodeClaim(nc)
		Expect(err).To(MatchError(ContainSubstring("throttled")))
		stored := get(nc)
		Expect(stored.DeletionTimestamp.IsZero()).To(BeTrue())
		launchedCond := condition(stored, v1.ConditionTypeLaunched)
		Expect(launchedCond.Status).To(Equal(metav1.ConditionUnknown))
		Expect(launchedCond.Reason).To(Equal(lifecycle.ReasonLaunchFailed))
		Expect(launchedCond.Message).To(ContainSubstring("throttled"))
		expectReconciled(nc)
		Expect(condition(get(nc), v1.ConditionTypeLaunched).Status).To(Equal(metav1.ConditionTrue))
		Expect(cp.Calls(fake.MethodCreate)).To(Equal(2))
	})
	It("uses the reason of a CreateError", func() {
		cp.InjectError(fake.MethodCreate, cloudprovider.NewCreateError(errors.New("boom"), "SubnetFull", "subnet subnet-1 is full"))
		nc := newNodeClaim()
		_, err := reconcileNodeClaim(nc)
		Expect(err).To(HaveOccurred())
		launchedCond := condition(get(nc), v1.ConditionTypeLaunched)
		Expect(launchedCond.Reason).To(Equal("SubnetFull"))
		Expect(launchedCond.Message).To(Equal("subnet subnet-1 is full"))
	})
	It("launches a type with the requested extended resource", func() {
		cp.InstanceTypes = append(cp.InstanceTypes, instanceType("g5.xlarge", resource.MustParse("4"),
			corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}))
		nc := launched(func(nc *v1.NodeClaim) {
			nc.Spec.Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		})
		Expect(nc.Labels).To(HaveKeyWithValue(v1.LabelInstanceType, "g5.xlarge"))
	})
})
