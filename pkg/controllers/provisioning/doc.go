// Package provisioning launches capacity for pods the kube-scheduler could not place: it watches pods
// marked unschedulable, batches them (idle and maximum windows), asks the scheduling simulator where they
// would go given a snapshot of the cluster, and creates the NodeClaims of the plan. It emits a Nominated
// event on every pod it found room for and, for every pending pod it could not place, an event with the
// reason per NodePool.
//
// Pods nominated in an earlier pass keep their place; when a pass must open NodeClaims and re-planning the
// nominated pods not bound yet (of claims still in flight, and waiting on Nodes) together with the new ones
// saves a clear share of the price, the nominations of the pods that plan moves change; a re-planned pod
// stays where it was unless a pod needing a host of its own takes its room (regroup.go). With
// PLAN_UNTRIED_PODS (on by default) a pass also plans pods the kube-scheduler has not tried yet (Plannable).
//
// Planning reports whether a pending pod that triggered the provisioner waits for a pass to plan it
// (unplanned.go); node registration holds new Nodes meanwhile, so that the Nodes of a burst's first pass do
// not open before the pass that plans the rest of the burst.
//
// Pods on nodes being drained (deleting, marked for deletion, or tainted karpenter.sh/disrupted:NoSchedule)
// are placed too, as if pending, so that their new capacity launches while the drain waits on
// PodDisruptionBudgets; NodeController triggers a pass for each such node. The draining node takes no pods
// but still counts against its pool's limits. Later passes find those pods (bound still, or pending once
// evicted) room on the NodeClaims launched for them, which count as capacity, so nothing launches twice.
//
// A NodePool whose instance types the cloud provider cannot list is left out of the pass (an error log, as
// Karpenter logs and skips it, a Warning event InstanceTypesUnresolved on the pool and its
// InstanceTypesResolved=False condition); the other pools provision.
package provisioning
