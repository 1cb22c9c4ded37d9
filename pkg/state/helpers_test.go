package state_test

import (
	"context"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/state"
	"github.com/lathe-autoscaler/lathe/pkg/state/informer"
)

// harness is a Cluster with its informer controllers, driven by calling Reconcile directly.
type harness struct {
	cluster  *state.Cluster
	registry *prometheus.Registry
	clock    *clocktesting.FakeClock

	nodes      *informer.NodeController
	nodeClaims *informer.NodeClaimController
	pods       *informer.PodController
	daemonSets *informer.DaemonSetController
	pdbs       *informer.PDBController
}

func newHarness() *harness {
	reg := prometheus.NewRegistry()
	clk := clocktesting.NewFakeClock(metav1.Now().Time)
	c := state.NewCluster(state.Deps{Reader: env.Client, Clock: clk, Registerer: reg})
	return &harness{
		cluster:    c,
		registry:   reg,
		clock:      clk,
		nodes:      informer.NewNodeController(informer.NodeDeps{Reader: env.Client, Store: c.Nodes}),
		nodeClaims: informer.NewNodeClaimController(informer.NodeClaimDeps{Reader: env.Client, Store: c.Nodes}),
		pods:       informer.NewPodController(informer.PodDeps{Reader: env.Client, Store: c.Pods}),
		daemonSets: informer.NewDaemonSetController(informer.DaemonSetDeps{Reader: env.Client, Store: c.DaemonSets}),
		pdbs:       informer.NewPDBController(informer.PDBDeps{Reader: env.Client, Store: c.PDBs}),
	}
}

// reconciler is what every informer controller is.
type reconciler interface {
	Reconcile(context.Context, reconcile.Request) (reconcile.Result, error)
}

// sync runs the informer controller for each object's kind.
func (h *harness) sync(ctx context.Context, objs ...client.Object) {
	for _, obj := range objs {
		var r reconciler
		switch obj.(type) {
		case *corev1.Node:
			r = h.nodes
		case *v1.NodeClaim:
			r = h.nodeClaims
		case *corev1.Pod:
			r = h.pods
		case *appsv1.DaemonSet:
			r = h.daemonSets
		case *policyv1.PodDisruptionBudget:
			r = h.pdbs
		default:
			panic("no informer for object")
		}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
		_, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
	}
}

func resources(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
}

// createNodeClaim creates a NodeClaim of the pool; a non-empty providerID marks it launched with capacity.
func createNodeClaim(ctx context.Context, name, pool, providerID string, capacity corev1.ResourceList) *v1.NodeClaim {
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: pool}},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
			},
			Resources:    v1.ResourceRequirements{Requests: resources("1", "1Gi")},
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		},
	}
	Expect(env.Client.Create(ctx, nc)).To(Succeed())
	if providerID != "" {
		nc.Status.ProviderID = providerID
		nc.Status.Capacity = capacity
		nc.Status.Allocatable = capacity
		Expect(env.Client.Status().Update(ctx, nc)).To(Succeed())
	}
	return nc
}

// createNode creates a Node (of the pool, if pool is set) with capacity and allocatable set.
func createNode(ctx context.Context, name, pool, providerID string, capacity corev1.ResourceList) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	if pool != "" {
		n.Labels[v1.NodePoolLabelKey] = pool
	}
	Expect(env.Client.Create(ctx, n)).To(Succeed())
	n.Status.Capacity = capacity
	n.Status.Allocatable = capacity
	Expect(env.Client.Status().Update(ctx, n)).To(Succeed())
	return n
}

// createPod creates a pod bound to nodeName (unbound if empty) requesting cpu and memory, with an optional
// host port.
func createPod(ctx context.Context, name, nodeName, cpu, memory string, hostPort int32) *corev1.Pod {
	c := corev1.Container{Name: "app", Image: "app", Resources: corev1.ResourceRequirements{Requests: resources(cpu, memory)}}
	if hostPort != 0 {
		c.Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: hostPort}}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{c}},
	}
	Expect(env.Client.Create(ctx, p)).To(Succeed())
	return p
}

func createDaemonSet(ctx context.Context, name, cpu string) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "agent", Image: "agent",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
				}}},
			},
		},
	}
	Expect(env.Client.Create(ctx, ds)).To(Succeed())
	return ds
}

func createPDB(ctx context.Context, name string) *policyv1.PodDisruptionBudget {
	minAvailable := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
	Expect(env.Client.Create(ctx, pdb)).To(Succeed())
	return pdb
}

func podObject() client.Object       { return &corev1.Pod{} }
func daemonSetObject() client.Object { return &appsv1.DaemonSet{} }
func pdbObject() client.Object       { return &policyv1.PodDisruptionBudget{} }
func nodeClaimObject() client.Object { return &v1.NodeClaim{} }
func nodeObject() client.Object      { return &corev1.Node{} }

func inDefault() client.DeleteAllOfOption { return client.InNamespace("default") }
func zeroGrace() client.DeleteAllOfOption { return client.GracePeriodSeconds(0) }

// stateNode returns the snapshot's node with the name, or nil.
func stateNode(snap *state.Snapshot, name string) *state.StateNode {
	for _, n := range snap.Nodes {
		if n.Node.Name == name {
			return n
		}
	}
	return nil
}

func quantity(s string) resource.Quantity { return resource.MustParse(s) }

func zeroGracePeriod() client.DeleteOption { return client.GracePeriodSeconds(0) }
