// Package counter keeps each NodePool's status.resources (the summed capacity of its nodes, with their count
// under "nodes") and status.nodes current, and exports them, with the pool's limits, as the
// karpenter_nodepools_usage and karpenter_nodepools_limit gauges.
//
// A machine is counted once it has launched (its NodeClaim has a provider ID) or its Node has joined, and
// stops being counted as soon as its NodeClaim or Node is being deleted, so the status shows what the pool
// will hold rather than what it is letting go of. Its capacity is the NodeClaim's, or the Node's when the
// NodeClaim does not say.
//
// The controller publishes no events: Karpenter's counter publishes none either.
package counter
