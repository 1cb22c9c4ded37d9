package lifecycle_test

import (
	"slices"
	"time"

	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/lifecycle"
)

var _ = Describe("Registration", func() {
	customTaint := corev1.Taint{Key: "example.com/dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}
	startupTaint := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	withTaints := func(nc *v1.NodeClaim) {
		nc.Spec.Taints = []corev1.Taint{customTaint}
		nc.Spec.StartupTaints = []corev1.Taint{startupTaint}
		nc.Annotations = map[string]string{"example.com/owner": "team-blue"}
	}

	It("waits for the node", func() {
		nc := launched()
		registered := condition(nc, v1.ConditionTypeRegistered)
		Expect(registered.Status).To(Equal(metav1.ConditionUnknown))
		Expect(registered.Reason).To(Equal(lifecycle.ReasonNodeNotFound))
		Expect(registered.Message).To(Equal("awaiting node"))
	})
	It("syncs the claim onto its node and sets Registered", func() {
		nc := launched(withTaints)
		node := newNode(nc)
		expectReconciled(nc)

		nc = get(nc)
		Expect(condition(nc, v1.ConditionTypeRegistered).Status).To(Equal(metav1.ConditionTrue))
		Expect(nc.Status.NodeName).To(Equal(node.Name))

		node = getNode(node)
		Expect(node.Labels).To(HaveKeyWithValue(v1.NodeRegisteredLabelKey, "true"))
		Expect(node.Labels).To(HaveKeyWithValue(v1.NodePoolLabelKey, "default"))
		Expect(node.Labels).To(HaveKeyWithValue(v1.LabelInstanceType, "m5.large"))
		Expect(node.Labels).To(HaveKeyWithValue("kubelet.example.com/own", "kept"))
		Expect(node.Annotations).To(HaveKeyWithValue("example.com/owner", "team-blue"))
		// The API server adds node.kubernetes.io/not-ready to new nodes itself.
		Expect(withoutNotReady(node.Spec.Taints)).To(ConsistOf(customTaint, startupTaint))
		Expect(node.Finalizers).To(ContainElement(v1.TerminationFinalizer))
		Expect(node.OwnerReferences).To(HaveLen(1))
		owner := node.OwnerReferences[0]
		Expect(owner.Kind).To(Equal("NodeClaim"))
		Expect(owner.Name).To(Equal(nc.Name))
		Expect(owner.UID).To(Equal(nc.UID))
		Expect(owner.Controller).To(HaveValue(BeTrue()))
		Expect(recorder.WithReason(lifecycle.EventReasonUnregisteredTaintMissing)).To(BeEmpty())
		Expect(counter("karpenter_nodes_created_total", map[string]string{"nodepool": "default", "zone": get(nc).Labels[v1.LabelTopologyZone]})).To(Equal(1.0))
	})
	It("reconciles a node it finds through the node's provider id only", func() {
		nc := launched()
		other := newNode(nc, func(n *corev1.Node) { n.Spec.ProviderID = "fake:///elsewhere/99" })
		expectReconciled(nc)
		Expect(condition(get(nc), v1.ConditionTypeRegistered).Status).To(Equal(metav1.ConditionUnknown))
		Expect(getNode(other).Labels).NotTo(HaveKey(v1.NodeRegisteredLabelKey))
	})
	It("publishes UnregisteredTaintMissing when the node never had the taint", func() {
		nc := launched()
		node := newNode(nc, func(n *corev1.Node) { n.Spec.Taints = nil })
		expectReconciled(nc)
		Expect(recorder.WithReason(lifecycle.EventReasonUnregisteredTaintMissing)).To(HaveLen(1))
		Expect(condition(get(nc), v1.ConditionTypeRegistered).Status).To(Equal(metav1.ConditionTrue))
		Expect(getNode(node).Labels).To(HaveKeyWithValue(v1.NodeRegisteredLabelKey, "true"))
	})
	It("doesn't sync taints onto a node labeled do-not-sync-taints", func() {
		nc := launched(withTaints)
		node := newNode(nc, func(n *corev1.Node) { n.Labels[v1.NodeDoNotSyncTaintsKey] = "true" })
		expectReconciled(nc)
		node = getNode(node)
		Expect(withoutNotReady(node.Spec.Taints)).To(BeEmpty())
		Expect(node.Labels).To(HaveKeyWithValue(v1.NodeRegisteredLabelKey, "true"))
	})
	It("doesn't add startup taints again after the first registration", func() {
		nc := launched(withTaints)
		// A retry after a failed claim write: the node was already synced and its startup taint removed.
		node := newNode(nc, func(n *corev1.Node) {
			n.Labels[v1.NodeRegisteredLabelKey] = "true"
			n.Spec.Taints = nil
		})
		expectReconciled(nc)
		Expect(withoutNotReady(getNode(node).Spec.Taints)).To(ConsistOf(customTaint))
		Expect(counter("karpenter_nodes_created_total", map[string]string{"nodepool": "default"})).To(BeZero())
	})
	It("takes the NoExecute effect off a held node's unregistered taint before the node opens", func() {
		controller = newController(kubeClient, withHints(allHinted{}))
		nc := launched()
		node := newNode(nc)
		setNodeStatus(node, true, nil)

		Expect(expectReconciled(nc).RequeueAfter).To(BeNumerically(">", 0))
		Expect(withoutNotReady(getNode(node).Spec.Taints)).To(ConsistOf(v1.UnregisteredNoScheduleTaint))
		Expect(condition(get(nc), v1.ConditionTypeRegistered).Status).NotTo(Equal(metav1.ConditionTrue))

		// Ready, every pod told its node: the Node releases the held Nodes, itself with them, and opens when
		// it comes back as they do.
		Expect(expectReconciled(nc).RequeueAfter).To(BeNumerically(">", 0))
		Expect(condition(get(nc), v1.ConditionTypeRegistered).Status).NotTo(Equal(metav1.ConditionTrue))
		expectReconciled(nc)
		Expect(condition(get(nc), v1.ConditionTypeRegistered).Status).To(Equal(metav1.ConditionTrue))
		Expect(withoutNotReady(getNode(node).Spec.Taints)).To(BeEmpty())
		Expect(recorder.WithReason(lifecycle.EventReasonUnregisteredTaintMissing)).To(BeEmpty())
	})
	It("disarms a held node whose cached copy lags behind the API server", func() {
		nc := launched()
		node := newNode(nc)
		setNodeStatus(node, true, nil)
		cache := &laggingCache{Client: kubeClient, node: getNode(node)}
		heartbeat(node) // written after the cache's copy, as the kubelet and the node lifecycle controller do
		controller = newController(cache, readingFrom(kubeClient), withHints(allHinted{}))

		expectReconciled(nc)
		Expect(withoutNotReady(getNode(node).Spec.Taints)).To(ConsistOf(v1.UnregisteredNoScheduleTaint))
	})
	It("replaces the unregistered taint once while its cache shows versions from before the write", func() {
		nc := launched()
		node := newNode(nc)
		setNodeStatus(node, true, nil)
		patches := &nodePatchCounter{Client: kubeClient}
		cache := &laggingCache{Client: patches, node: getNode(node)}
		heartbeat(node)
		between := getNode(node) // newer than the cache's copy, older than the write to come
		controller = newController(cache, readingFrom(kubeClient), withHints(allHinted{}))

		expectReconciled(nc)
		Expect(withoutNotReady(getNode(node).Spec.Taints)).To(ConsistOf(v1.UnregisteredNoScheduleTaint))
		written := patches.count
		cache.node = between
		expectReconciled(nc)
		Expect(patches.count).To(Equal(written), "patched again from a copy older than its own write")
	})
	It("registers a held node from its own taint write while the cache shows the node from before it", func() {
		nc := launched()
		node := newNode(nc)
		setNodeStatus(node, true, nil)
		cache := &laggingCache{Client: kubeClient, node: getNode(node)} // never shows the taint swap
		reads := &readCounter[*corev1.Node]{Reader: kubeClient}
		controller = newController(cache, readingFrom(reads), withHints(allHinted{}))
		expectReconciled(nc)
		Expect(withoutNotReady(getNode(node).Spec.Taints)).To(ConsistOf(v1.UnregisteredNoScheduleTaint))

		clk.Step(lifecycle.HoldLimit + 2*time.Second)
		expectReconciled(nc)
		Expect(condition(get(nc), v1.ConditionTypeRegistered).Status).To(Equal(metav1.ConditionTrue))
		Expect(withoutNotReady(getNode(node).Spec.Taints)).To(BeEmpty())
		Expect(reads.count).To(BeZero(), "registered from the copy the taint write returned, not the cache's older one")
	})
	It("registers a node whose cached copy lags behind the API server", func() {
		nc := launched(withTaints)
		node := newNode(nc)
		cache := &laggingCache{Client: kubeClient, node: getNode(node)}
		heartbeat(node)
		reads := &readCounter[*corev1.Node]{Reader: kubeClient}
		controller = newController(cache, readingFrom(reads))

		expectReconciled(nc)
		Expect(reads.count).To(BeZero(), "a write to a field registration doesn't change is no conflict")
		Expect(condition(get(nc), v1.ConditionTypeRegistered).Status).To(Equal(metav1.ConditionTrue))
		node = getNode(node)
		Expect(node.Labels).To(HaveKeyWithValue(v1.NodeRegisteredLabelKey, "true"))
		Expect(node.Labels).To(HaveKeyWithValue(heartbeatLabel, "1"), "the write after the cache's copy is kept")
		Expect(withoutNotReady(node.Spec.Taints)).To(ConsistOf(customTaint, startupTaint))
	})
	It("keeps a taint added after the cached copy it registers the node from", func() {
		nc := launched(withTaints)
		node := newNode(nc)
		cache := &laggingCache{Client: kubeClient, node: getNode(node)}
		added := corev1.Taint{Key: "example.com/added-meanwhile", Effect: corev1.TaintEffectNoSchedule}
		fresh := getNode(node)
		stored := fresh.DeepCopy()
		fresh.Spec.Taints = append(fresh.Spec.Taints, added)
		Expect(kubeClient.Patch(ctx, fresh, client.MergeFrom(stored))).To(Succeed())
		reads := &readCounter[*corev1.Node]{Reader: kubeClient}
		controller = newController(cache, readingFrom(reads))

		expectReconciled(nc)
		Expect(condition(get(nc), v1.ConditionTypeRegistered).Status).To(Equal(metav1.ConditionTrue))
		Expect(withoutNotReady(getNode(node).Spec.Taints)).To(ConsistOf(customTaint, startupTaint, added))
		Expect(reads.count).To(Equal(1), "the taint write lost to the one after the cached copy, and was made again on a fresh read")
	})
	It("registers at once when the claim changed after its cached copy only where its write doesn't replace", func() {
		nc := launched()
		newNode(nc)
		cache := &laggingCache{Client: kubeClient, claim: get(nc)}
		stored := get(nc)
		touched := stored.DeepCopy()
		touched.Labels["example.com/touched"] = "1" // another writer, after the cache's copy
		Expect(kubeClient.Patch(ctx, touched, client.MergeFrom(stored))).To(Succeed())
		controller = newController(cache, readingFrom(kubeClient))

		Expect(expectReconciled(nc).RequeueAfter).To(BeZero())
		Expect(condition(get(nc), v1.ConditionTypeRegistered).Status).To(Equal(metav1.ConditionTrue))
		Expect(get(nc).Labels).To(HaveKeyWithValue("example.com/touched", "1"))
	})
	It("reads the claim from the API server after its write lost to a newer version", func() {
		nc := launched()
		newNode(nc)
		cache := &laggingCache{Client: kubeClient, claim: get(nc)}
		stored := get(nc)
		touched := stored.DeepCopy()
		// Another controller sets its condition after the cache's copy: the conditions are written whole.
		touched.Status.Conditions = append(touched.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeDrifted,
			Status: metav1.ConditionTrue, Reason: "NodePoolDrifted", LastTransitionTime: metav1.Now()})
		Expect(kubeClient.Status().Patch(ctx, touched, client.MergeFrom(stored))).To(Succeed())
		controller = newController(cache, readingFrom(kubeClient))

		Expect(expectReconciled(nc).RequeueAfter).To(BeNumerically(">", 0), "the stale copy's write conflicts")
		Expect(condition(get(nc), v1.ConditionTypeRegistered).Status).NotTo(Equal(metav1.ConditionTrue))
		expectReconciled(nc)
		Expect(condition(get(nc), v1.ConditionTypeRegistered).Status).To(Equal(metav1.ConditionTrue))
		Expect(condition(get(nc), v1.ConditionTypeDrifted).Status).To(Equal(metav1.ConditionTrue), "the other controller's condition is kept")
	})
	It("fails when two nodes have the claim's provider id", func() {
		nc := launched()
		newNode(nc)
		newNode(nc)
		_, err := reconcileNodeClaim(nc)
		Expect(err).To(MatchError(ContainSubstring("all have provider id")))
		registered := condition(get(nc), v1.ConditionTypeRegistered)
		Expect(registered.Status).To(Equal(metav1.ConditionFalse))
		Expect(registered.Reason).To(Equal(lifecycle.ReasonMultipleNodesFound))
	})
})

// withoutNotReady drops the not-ready taint the API server puts on new nodes.
func withoutNotReady(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Key != corev1.TaintNodeNotReady {
			out = append(out, t)
		}
	}
	return out
}

// laggingCache is a cache that still shows node and claim as they were: a read of either returns that copy,
// as an informer does until its watch delivers the writes made since.
type laggingCache struct {
	client.Client
	node  *corev1.Node
	claim *v1.NodeClaim
}

func (c *laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	switch out := obj.(type) {
	case *corev1.Node:
		if c.node != nil && key.Name == c.node.Name {
			c.node.DeepCopyInto(out)
			return nil
		}
	case *v1.NodeClaim:
		if c.claim != nil && key.Name == c.claim.Name {
			c.claim.DeepCopyInto(out)
			return nil
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if out, ok := list.(*corev1.NodeList); ok && c.node != nil {
		for i := range out.Items {
			if out.Items[i].Name == c.node.Name {
				c.node.DeepCopyInto(&out.Items[i])
			}
		}
	}
	if out, ok := list.(*v1.NodeClaimList); ok && c.claim != nil {
		// The claims listed by provider ID (the only claim lists here): the stale copy lists only if it had
		// that provider ID already.
		out.Items = slices.DeleteFunc(out.Items, func(nc v1.NodeClaim) bool {
			return nc.Name == c.claim.Name && nc.Status.ProviderID != c.claim.Status.ProviderID
		})
	}
	return nil
}

// heartbeatLabel is what heartbeat writes.
const heartbeatLabel = "kubelet.example.com/heartbeat"

// heartbeat writes the Node, as another component does, so that a copy read before is stale.
func heartbeat(node *corev1.Node) {
	GinkgoHelper()
	node = getNode(node)
	stored := node.DeepCopy()
	node.Labels[heartbeatLabel] = "1"
	Expect(kubeClient.Patch(ctx, node, client.MergeFrom(stored))).To(Succeed())
}

// allHinted tells registration that every pod planned onto a held Node has its hint.
type allHinted struct{}

func (allHinted) Unhinted(context.Context) (int, error) { return 0, nil }

// nodePatchCounter counts the patches of Nodes made through it.
type nodePatchCounter struct {
	client.Client
	count int
}

func (c *nodePatchCounter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if _, ok := obj.(*corev1.Node); ok {
		c.count++
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// readCounter counts the objects of type T read through it.
type readCounter[T client.Object] struct {
	client.Reader
	count int
}

func (c *readCounter[T]) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(T); ok {
		c.count++
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}
