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
package interruption
