// Package podevents records when pods last arrived on or left a managed node: it sets the node's NodeClaim
// status.lastPodEventTime whenever a pod is bound to the node, finishes, starts terminating or is deleted.
// Consolidation measures consolidateAfter from that time, so a node that keeps gaining and losing pods is
// not consolidated while it is busy.
//
// Writes are rate-limited: a NodeClaim whose lastPodEventTime is younger than DedupeTimeout is written again
// only when that window ends (the reconcile requeues for the time left), so a busy node costs one status
// write per window instead of one per pod. DaemonSet pods are ignored, as upstream Karpenter does.
package podevents
