// Package nomination tells the kube-scheduler where Lathe planned each pending pod (KEP-5278): once the Node
// of the NodeClaim a pod was planned onto exists, it sets the pod's status.nominatedNodeName to that Node,
// and clears it when the plan no longer holds. The kube-scheduler (v1.37) tries a pod's nominated node
// first and counts pods nominated to a node against it when it places pods of equal or lower priority, so
// the planned room stays free for them; but it binds a pod elsewhere when the nominated node does not fit
// yet, and clears the nomination on every failed attempt (docs/performance.md, "Plan fidelity"). So the
// hint is written again whenever it is cleared, and registration holds a new Node until the pods planned
// onto it carry their hint (Unhinted, lifecycle.Hints).
//
// A nomination the kube-scheduler set itself (preemption, or a pod about to be bound) is never touched:
// the owner of status.nominatedNodeName is read from the pod's managed fields, and Lathe writes only as
// provisioning.NominationFieldManager.
package nomination
