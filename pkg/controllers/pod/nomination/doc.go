// Package nomination tells the kube-scheduler where Lathe planned each pending pod (KEP-5278): once the Node
// of the NodeClaim a pod was planned onto exists, it sets the pod's status.nominatedNodeName to that Node,
// and clears it when the plan no longer holds. Since Kubernetes v1.35 (feature gate
// NominatedNodeNameForExpectation, beta and on by default) the kube-scheduler keeps a nomination set by
// another component, tries that node first and counts the pod against it while it waits, so pods land
// where the plan put them instead of spreading over whatever room is free.
//
// A nomination the kube-scheduler set itself (preemption, or a pod about to be bound) is never touched:
// the owner of status.nominatedNodeName is read from the pod's managed fields, and Lathe writes only as
// provisioning.NominationFieldManager.
package nomination
