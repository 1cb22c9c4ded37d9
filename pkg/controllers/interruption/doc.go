// Package interruption acts on the interruption messages a cloud provider reports
// (cloudprovider.InterruptionSource), whatever the provider:
//
//	spot_interrupted, scheduled_change,      event, then the NodeClaim is deleted: its Node is tainted
//	instance_stopped, instance_terminated,   and drained while the provisioner launches a replacement
//	capacity_reservation_interrupted
//	rebalance_recommendation                 event only
//	no_op, or an instance Lathe doesn't know counted and deleted
//	unreadable (Err set)                     logged and deleted, not counted as received
//
// The messages of one receive are handled concurrently (Parallelism at a time, as Karpenter's AWS
// provider does). Each is deleted from the provider's queue once handled, so one whose handling failed is
// received again. Marking a spot-interrupted offering unavailable is the provider's part: it owns that cache and
// does so when it receives the message.
//
// HealthController does the same for the instances a provider's cloudprovider.InstanceHealthSource finds
// unhealthy, polled every minute: instance_status and system_status (a failing status check) get their
// NodeClaim's termination timestamp set to now before it is deleted, so the drain doesn't wait on
// disruption budgets; event_status (scheduled maintenance) is replaced like scheduled_change. It counts
// each instance and category once while it stays unhealthy; credentials that don't allow the check
// (cloudprovider.ErrNotPermitted) are logged and the polling goes on.
package interruption
