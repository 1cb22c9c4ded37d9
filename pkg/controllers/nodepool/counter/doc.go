// Package counter keeps each NodePool's status.resources (the summed capacity of its nodes, with their count
// under "nodes") and status.nodes current, and exports them, with the pool's limits, as the
// karpenter_nodepools_usage and karpenter_nodepools_limit gauges.
//
// What a pool's machines add up to is pkg/state's rule (Cluster.NodePoolResources), which the counter reads
// once the state is synced: a machine is counted once it has launched (its NodeClaim has a provider ID) or
// its Node has joined, and stops being counted as soon as it is marked for deletion (its NodeClaim or Node
// is being deleted, a loop marked it, or it carries the disrupted taint), so the status shows what the
// pool will hold rather than what it is letting go of. Its capacity is the NodeClaim's, or the Node's when
// the NodeClaim does not say. (NodePool limits are checked against more: machines being deleted count
// until they are gone.) A pool is recounted on its NodeClaims' and Nodes' events and every 5 s.
//
// The controller publishes no events: Karpenter's counter publishes none either.
package counter
