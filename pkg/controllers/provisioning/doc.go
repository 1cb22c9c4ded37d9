// Package provisioning launches capacity for pods the kube-scheduler could not place: it watches pods
// marked unschedulable, batches them (idle and maximum windows), asks the scheduling simulator where they
// would go given a snapshot of the cluster, and creates the NodeClaims of the plan. It emits a Nominated
// event on every pod it found room for and, for every pod it could not place, an event with the reason
// per NodePool.
package provisioning
