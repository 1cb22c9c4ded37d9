// Package state is Lathe's in-memory view of the cluster: the nodes and NodeClaims it manages, the pods bound
// to them, the daemonsets whose pods every new node must hold, the PodDisruptionBudgets, and the nodes marked
// for deletion. Decision loops (provisioning, disruption, the NodePool counter) read it instead of listing
// the API server on every pass.
//
// # Stores
//
// The view is split by concern, each store behind its own lock:
//
//   - NodeStore: Nodes and NodeClaims, joined by provider ID. A NodeClaim whose Node has not joined yet is
//     "in flight"; a Node without a NodeClaim is an unmanaged node. A claim's provider ID comes from its
//     status, or first from its launch (NodeStore.Launched, told by the lifecycle controller), since under
//     load the status reaches the informer after the Node the launch created.
//   - PodStore: the pods bound to each node, with their summed requests and host ports, and the pending pods
//     the provisioner nominated to a node or NodeClaim (Cluster.Nominate).
//   - DaemonSetStore and PDBStore: DaemonSets and PodDisruptionBudgets by namespace/name.
//   - DeletionMarks: provider IDs a disruption or termination loop has claimed for deletion.
//
// The stores are fed by the thin controllers in pkg/state/informer, one per kind. Every change that matters
// to scheduling bumps a shared monotonic Stamp, so a loop can skip a pass when nothing has moved.
//
// # Reading
//
// Cluster ties the stores together. Cluster.Synced reports whether the stores hold everything the API server
// (through the manager's cache) has; loops must not decide until it does. Cluster.Snapshot returns deep-copied
// values that the scheduling simulator may read (and even modify) without affecting the stores:
//
//	if !cluster.Synced(ctx) {
//		return reconcile.Result{RequeueAfter: time.Second}, nil
//	}
//	snap := cluster.Snapshot()
//	for _, n := range snap.Nodes { ... }
//
// # Nominations
//
// A pending pod the provisioner planned onto a node or NodeClaim is nominated there until it is bound or
// deleted, the target is gone or marked for deletion, or NominationWindow has passed since the latest of the
// nomination, the target's Node becoming Ready and its NodeClaim becoming Registered (Karpenter's window; a
// claim still in flight, or whose Node registration still holds, keeps its pods; HintedWindowFactor windows
// while the pod's status.nominatedNodeName names the Node), or the kube-scheduler rejected the pod on the
// target's open Node (Cluster.Reject).
// This is the one place that rule lives: Snapshot lists each node's and in-flight claim's live nominated
// pods (Nominated), which count as using it, and Cluster.NominationOf / Cluster.Nominations answer per pod.
//
// # NodePool usage
//
// NodePool usage has one owner here, with two rules: Snapshot.NodePoolUsage is what spec.limits are checked
// against (every machine until it is gone, claims still launching with what they requested), and
// Cluster.NodePoolResources is what status.resources reports (launched machines not marked for deletion).
// A machine is marked for deletion when its Node or NodeClaim is being deleted, a loop marked it in
// DeletionMarks, or its Node carries the karpenter.sh/disrupted:NoSchedule taint.
package state
