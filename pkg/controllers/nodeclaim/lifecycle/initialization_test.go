package lifecycle_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/nodeclaim/lifecycle"
)

var _ = Describe("Initialization", func() {
	basics := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("7Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	// registered launches a claim, creates its node and reconciles until Registered.
	registered := func(opts ...nodeClaimOption) (*v1.NodeClaim, *corev1.Node) {
		GinkgoHelper()
		nc := launched(opts...)
		node := newNode(nc)
		expectReconciled(nc)
		nc = get(nc)
		Expect(condition(nc, v1.ConditionTypeRegistered).Status).To(Equal(metav1.ConditionTrue))
		return nc, node
	}
	expectInitialized := func(nc *v1.NodeClaim, status metav1.ConditionStatus, reason, message string) {
		GinkgoHelper()
		c := condition(get(nc), v1.ConditionTypeInitialized)
		Expect(c.Status).To(Equal(status))
		Expect(c.Reason).To(Equal(reason))
		if message != "" {
			Expect(c.Message).To(Equal(message))
		}
	}
	removeTaint := func(node *corev1.Node, key string) {
		GinkgoHelper()
		node = getNode(node)
		stored := node.DeepCopy()
		var kept []corev1.Taint
		for _, t := range node.Spec.Taints {
			if t.Key != key {
				kept = append(kept, t)
			}
		}
		node.Spec.Taints = kept
		Expect(kubeClient.Patch(ctx, node, client.MergeFrom(stored))).To(Succeed())
	}

	It("waits for the node to be Ready", func() {
		nc, node := registered()
		expectInitialized(nc, metav1.ConditionUnknown, lifecycle.ReasonNodeNotReady, "node not ready")
		setNodeStatus(node, false, basics)
		expectReconciled(nc)
		expectInitialized(nc, metav1.ConditionUnknown, lifecycle.ReasonNodeNotReady, "node not ready")
		Expect(getNode(node).Labels).NotTo(HaveKey(v1.NodeInitializedLabelKey))

		setNodeStatus(node, true, basics)
		expectReconciled(nc)
		expectInitialized(nc, metav1.ConditionTrue, v1.ConditionTypeInitialized, "")
		Expect(getNode(node).Labels).To(HaveKeyWithValue(v1.NodeInitializedLabelKey, "true"))
	})
	It("labels a node that is already usable at registration in the registering write", func() {
		nc := launched()
		node := newNode(nc)
		setNodeStatus(node, true, basics)
		counting := &nodePatchCounter{Client: kubeClient}
		_, err := newController(counting).Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)})
		Expect(err).NotTo(HaveOccurred())
		expectInitialized(nc, metav1.ConditionTrue, v1.ConditionTypeInitialized, "")
		Expect(getNode(node).Labels).To(And(HaveKeyWithValue(v1.NodeRegisteredLabelKey, "true"), HaveKeyWithValue(v1.NodeInitializedLabelKey, "true")))
		Expect(counting.count).To(Equal(1), "one Node update registers and initializes it")
	})
	It("waits for the startup taints to go", func() {
		nc, node := registered(func(nc *v1.NodeClaim) {
			nc.Spec.StartupTaints = []corev1.Taint{{Key: "example.com/x", Effect: corev1.TaintEffectNoSchedule}}
		})
		setNodeStatus(node, true, basics)
		expectReconciled(nc)
		expectInitialized(nc, metav1.ConditionUnknown, lifecycle.ReasonStartupTaintsExist, "startup taint example.com/x still present")
		removeTaint(node, "example.com/x")
		expectReconciled(nc)
		expectInitialized(nc, metav1.ConditionTrue, v1.ConditionTypeInitialized, "")
	})
	It("waits for the known ephemeral taints to go", func() {
		nc, node := registered()
		setNodeStatus(node, true, basics)
		node = getNode(node)
		stored := node.DeepCopy()
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
		Expect(kubeClient.Patch(ctx, node, client.MergeFrom(stored))).To(Succeed())
		expectReconciled(nc)
		expectInitialized(nc, metav1.ConditionUnknown, lifecycle.ReasonKnownEphemeralTaintsExist, "")
		removeTaint(node, corev1.TaintNodeNotReady)
		expectReconciled(nc)
		expectInitialized(nc, metav1.ConditionTrue, v1.ConditionTypeInitialized, "")
	})
	It("waits for requested extended resources to be registered", func() {
		cp.InstanceTypes = append(cp.InstanceTypes, instanceType("g5.xlarge", resource.MustParse("4"),
			corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}))
		nc, node := registered(func(nc *v1.NodeClaim) {
			nc.Spec.Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		})
		setNodeStatus(node, true, basics)
		expectReconciled(nc)
		expectInitialized(nc, metav1.ConditionUnknown, lifecycle.ReasonResourceNotRegistered, "resource nvidia.com/gpu not registered")

		withGPU := basics.DeepCopy()
		withGPU["nvidia.com/gpu"] = resource.MustParse("0")
		setNodeStatus(node, true, withGPU)
		expectReconciled(nc)
		expectInitialized(nc, metav1.ConditionUnknown, lifecycle.ReasonResourceNotRegistered, "")

		withGPU["nvidia.com/gpu"] = resource.MustParse("1")
		setNodeStatus(node, true, withGPU)
		expectReconciled(nc)
		expectInitialized(nc, metav1.ConditionTrue, v1.ConditionTypeInitialized, "")
	})
})

var _ = Describe("Ready", func() {
	ready := func(nc *v1.NodeClaim) metav1.Condition {
		GinkgoHelper()
		return condition(get(nc), v1.ConditionTypeReady)
	}
	It("follows the first condition that isn't True", func() {
		nc := launched()
		Expect(ready(nc).Status).To(Equal(metav1.ConditionUnknown))
		Expect(ready(nc).Reason).To(Equal(lifecycle.ReasonNodeNotFound))

		node := newNode(nc)
		expectReconciled(nc)
		Expect(ready(nc).Status).To(Equal(metav1.ConditionUnknown))
		Expect(ready(nc).Reason).To(Equal(lifecycle.ReasonNodeNotReady))

		setNodeStatus(node, true, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")})
		expectReconciled(nc)
		Expect(ready(nc).Status).To(Equal(metav1.ConditionTrue))
		Expect(ready(nc).Reason).To(Equal(v1.ConditionTypeReady))
	})
})
