// Package termination finalizes Nodes that Lathe manages: it runs when a Node carrying the
// karpenter.sh/termination finalizer is deleted, whether by `kubectl delete node`, by the NodeClaim
// termination controller, or by disruption.
//
// # Flow
//
// Each pass of Reconcile goes through these steps and stops at the first one that has to wait:
//
//  1. Delete the Node's NodeClaim, so that the claim never outlives its Node.
//  2. Read the termination deadline from the NodeClaim's karpenter.sh/nodeclaim-termination-timestamp
//     annotation: set to "now" by node repair or a failing instance status check (with or without a
//     terminationGracePeriod), else recorded as the deletion timestamp + terminationGracePeriod when the
//     claim has one. Without either there is no deadline. The NodeClaim termination package
//     owns that rule (Deadline) and the instance termination of step 7 (Instances.Terminate); this
//     controller calls both.
//  3. Taint the Node karpenter.sh/disrupted:NoSchedule so nothing new lands on it.
//  4. If the instance is already gone, skip straight to step 8.
//  5. Drain: evict pods through the Eviction API (PodDisruptionBudgets apply), non-critical pods before
//     system-critical ones. DaemonSet pods, mirror pods, pods tolerating the disrupted taint and terminal
//     pods stay. Pods annotated karpenter.sh/do-not-disrupt wait for the deadline. Before the deadline a
//     pod is deleted (not evicted) at deadline − its terminationGracePeriodSeconds, so that it finishes in
//     time; at the deadline every remaining pod is deleted. Sets the NodeClaim condition Drained.
//  6. Wait until no VolumeAttachment refers to the Node (not after the deadline). Sets VolumesDetached.
//  7. Call CloudProvider.Delete until it reports the instance gone. Sets InstanceTerminating.
//  8. Remove the finalizer.
//
// Every wait is a RequeueAfter measured on the injected clock; nothing sleeps.
//
// # Indexes
//
// Register adds the pkg/controllers/fieldindex indexes to the manager's cache: the drain lists the pods bound
// to one node (PodNodeNameField), and the Node's NodeClaim is looked up by provider ID or node name.
// lists the pods bound to one node.
package termination
