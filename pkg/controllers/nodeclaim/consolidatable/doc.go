// Package consolidatable keeps a NodeClaim's Consolidatable condition: True once its NodePool's
// consolidateAfter has passed since the later of its last pod event (status.lastPodEventTime) and the time
// it was initialized, False before that (the message says how long is left), and absent while the claim is
// not initialized or the pool never consolidates (consolidateAfter: Never). The disruption loop only
// considers claims whose condition is True for emptiness and consolidation.
//
// Reconcile requeues after exactly the time left, measured on the injected clock.
package consolidatable
