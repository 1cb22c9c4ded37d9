// Package health repairs nodes (the NodeRepair feature gate): a node whose condition has matched one of the
// cloud provider's repair policies (for example Ready=False) for longer than the policy tolerates is
// replaced forcefully. Its NodeClaim gets a termination timestamp of now, so the drain doesn't wait for
// PDBs or do-not-disrupt pods, and is deleted; the provisioner launches a replacement for its pods.
//
// Repair holds back when more than 20% of the nodes of the node's NodePool (of the cluster, for a node of
// no pool) are unhealthy, which points at a cause replacing nodes won't fix; it publishes
// NodeRepairBlocked instead and looks again in five minutes.
package health
