// Package hash annotates each NodePool with karpenter.sh/nodepool-hash, a stable hash of its NodeClaim
// template, and karpenter.sh/nodepool-hash-version (v3). NodeClaims carry the hash of the template they were
// launched from; a NodeClaim whose hash differs from its pool's has drifted.
//
// Requirements are left out of the hash: drift compares them semantically instead, because narrowing or
// reordering requirements need not make existing nodes wrong.
//
// The controller publishes no events and exports no metrics.
package hash
