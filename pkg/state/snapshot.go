package state

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Snapshot is a point-in-time copy of the cluster view. Everything in it is deep-copied from the stores, so
// the reader owns it: it may keep it, share it between goroutines that only read it, or modify it (for
// example while simulating) without affecting the stores or other snapshots.
type Snapshot struct {
	// Stamp is the change stamp the snapshot was taken at; compare it with Cluster.ChangeStamp to tell
	// whether anything relevant changed since.
	Stamp uint64
	// Nodes are the machines that have a Node object, managed (with a NodeClaim) or not, sorted by key.
	Nodes []*StateNode
	// InFlight are the NodeClaims whose Node has not joined yet, sorted by key.
	InFlight []*InFlightNodeClaim
	// DaemonSets whose pods new nodes must make room for, sorted by namespace/name.
	DaemonSets []*appsv1.DaemonSet
	// PDBs are the PodDisruptionBudgets, sorted by namespace/name.
	PDBs []*policyv1.PodDisruptionBudget
	// NodePoolUsage is, per NodePool, the summed capacity of its nodes and in-flight NodeClaims with their
	// count under "nodes": what the pool's spec.limits are checked against. A claim that has not launched
	// yet counts with the resources it requested.
	NodePoolUsage map[string]corev1.ResourceList
}

// StateNode is a machine that has a Node object.
type StateNode struct {
	// ProviderID identifies the machine. It is empty when the cloud provider has not set it on the Node yet.
	ProviderID string
	// Node is the Node object.
	Node *corev1.Node
	// NodeClaim is the machine's NodeClaim, nil for a node Lathe does not manage.
	NodeClaim *v1.NodeClaim
	// NodePool is the pool the machine belongs to, empty for an unmanaged node.
	NodePool string
	// Labels and Taints are the Node's (the same map and slice as Node.Labels and Node.Spec.Taints).
	Labels map[string]string
	Taints []corev1.Taint
	// Capacity and Allocatable are the Node's, or the NodeClaim's while the kubelet has not reported them.
	Capacity    corev1.ResourceList
	Allocatable corev1.ResourceList
	// Requested is the sum of the bound pods' requests (including a "pods" count); DaemonSetRequested is
	// the part of it that daemonset pods take.
	Requested          corev1.ResourceList
	DaemonSetRequested corev1.ResourceList
	// Pods are the pods bound to the node, sorted by namespace/name.
	Pods []*corev1.Pod
	// HostPorts are the host ports the bound pods hold.
	HostPorts []HostPort
	// Nominated are the pending pods the provisioner planned onto the node whose nomination still holds
	// (see NominationWindow), sorted by namespace/name. They count as using the node: the provisioner
	// keeps their place, consolidation does not fill it, and disruption does not remove the node.
	Nominated []*corev1.Pod
	// MarkedForDeletion is true when the Node or NodeClaim is being deleted, a loop marked the machine for
	// deletion, or the Node carries the karpenter.sh/disrupted:NoSchedule taint (it is being drained). The
	// simulator must not place pods on such a node, and its reschedulable pods need room elsewhere; its
	// capacity still counts against its NodePool's limits until the Node is gone.
	MarkedForDeletion bool
}

// InFlightNodeClaim is a NodeClaim whose Node has not joined the cluster yet. The provisioner counts on it
// to hold the pods it was launched for.
type InFlightNodeClaim struct {
	// NodeClaim is the NodeClaim object.
	NodeClaim *v1.NodeClaim
	// NodePool is the pool the NodeClaim was launched from.
	NodePool string
	// Requirements are the NodeClaim's requirements.
	Requirements []v1.NodeSelectorRequirementWithMinValues
	// Requests are the resources the NodeClaim was launched to hold.
	Requests corev1.ResourceList
	// Capacity and Allocatable are known once the NodeClaim has launched; empty before.
	Capacity    corev1.ResourceList
	Allocatable corev1.ResourceList
	// Taints are the taints the Node will have (the NodeClaim's taints and startup taints).
	Taints []corev1.Taint
	// MarkedForDeletion is true when the NodeClaim is being deleted or a loop marked it for deletion.
	MarkedForDeletion bool
	// Nominated are the pending pods the provisioner planned onto the NodeClaim, sorted by namespace/name.
	Nominated []*corev1.Pod
}

// stateNode builds the snapshot value of a Node-backed entry. e and pods are already deep copies.
func stateNode(key string, e *nodeEntry, pods nodePods, marks map[string]struct{}) *StateNode {
	sn := &StateNode{
		ProviderID:         e.node.Spec.ProviderID,
		Node:               e.node,
		NodeClaim:          e.claim,
		NodePool:           e.nodePool(),
		Labels:             e.node.Labels,
		Taints:             e.node.Spec.Taints,
		Capacity:           e.capacity().DeepCopy(),
		Allocatable:        e.allocatable().DeepCopy(),
		Requested:          pods.requested,
		DaemonSetRequested: pods.daemonsetReq,
		Pods:               pods.pods,
		HostPorts:          pods.hostPorts,
	}
	sn.MarkedForDeletion = markedForDeletion(key, e, marks)
	return sn
}

// inFlight builds the snapshot value of a NodeClaim-only entry. e is already a deep copy.
func inFlight(key string, e *nodeEntry, marks map[string]struct{}) *InFlightNodeClaim {
	c := e.claim
	return &InFlightNodeClaim{
		NodeClaim:         c,
		NodePool:          e.nodePool(),
		Requirements:      c.Spec.Requirements,
		Requests:          c.Spec.Resources.Requests,
		Capacity:          c.Status.Capacity,
		Allocatable:       c.Status.Allocatable,
		Taints:            append(append([]corev1.Taint(nil), c.Spec.Taints...), c.Spec.StartupTaints...),
		MarkedForDeletion: markedForDeletion(key, e, marks),
	}
}

// markedForDeletion is the one rule for a machine going away: a loop marked it, its Node or NodeClaim is
// being deleted, or its Node carries the karpenter.sh/disrupted:NoSchedule taint (it is being drained).
func markedForDeletion(key string, e *nodeEntry, marks map[string]struct{}) bool {
	if _, marked := marks[key]; marked {
		return true
	}
	if e.claim != nil && e.claim.DeletionTimestamp != nil {
		return true
	}
	return e.node != nil && (e.node.DeletionTimestamp != nil ||
		slices.ContainsFunc(e.node.Spec.Taints, v1.IsDisruptedTaint))
}
