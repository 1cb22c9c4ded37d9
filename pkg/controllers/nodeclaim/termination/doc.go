// Package termination finalizes deleted NodeClaims: it runs when a NodeClaim carrying the
// karpenter.sh/termination finalizer is deleted, whether by `kubectl delete nodeclaim`, by disruption, or by
// the Node termination controller after `kubectl delete node`.
//
// # Flow
//
//  1. Record the termination deadline (deletion timestamp + spec.terminationGracePeriod) in the
//     karpenter.sh/nodeclaim-termination-timestamp annotation, when the claim has a grace period and no
//     such annotation yet. An annotation already there (node repair, failing status checks) is kept and
//     bounds the drain even without a grace period.
//  2. Delete the claim's Node(s), found by status.providerID (or status.nodeName), and wait until they are
//     gone: the Node termination controller drains them and terminates the instance.
//  3. Call CloudProvider.Delete until it reports the instance gone (NodeClaimNotFound), also for a claim
//     without a provider ID: its launch may not have been recorded, and the provider finds an instance by
//     its claim. Sets the InstanceTerminating condition meanwhile.
//  4. Remove the finalizer.
//
// # Shared rules
//
// This package owns the termination deadline (Deadline) and the termination of a claim's instance
// (Instances.Terminate); the Node termination controller calls both rather than keeping its own copies.
package termination
