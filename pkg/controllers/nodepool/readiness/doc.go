// Package readiness sets a NodePool's readiness conditions:
//
//   - ValidationSucceeded: the spec passed the checks the API server's CEL rules cannot make (requirements
//     that no node can satisfy together, labels that contradict the requirements, restricted labels,
//     disruption budget schedules that are not valid cron).
//   - NodeClassReady: mirrors the Ready condition of the EC2NodeClass the pool refers to; False with reason
//     NodeClassNotFound when there is no such class (only karpenter.k8s.aws/EC2NodeClass is known).
//   - Ready: True when both are True, False when either is False, Unknown otherwise.
//
// It also records the class's generation in status.nodeClassObservedGeneration. The provisioner launches
// only from Ready pools.
//
// The controller publishes no events and exports no metrics of its own: Karpenter reports NodePool
// conditions through its generic status-condition metrics.
package readiness
