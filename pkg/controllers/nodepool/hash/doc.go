// Package hash annotates each NodePool with karpenter.sh/nodepool-hash, the hash of its NodeClaim template
// ((*v1.NodePool).Hash, computed exactly as Karpenter computes it), and karpenter.sh/nodepool-hash-version.
// NodeClaims carry the hash and version of the template they were launched from; drift compares a claim's
// hash with its pool's only when both carry the same version.
//
// Requirements are left out of the hash: drift compares them semantically instead, because narrowing or
// reordering requirements need not make existing nodes wrong.
//
// The controller publishes no events and exports no metrics.
package hash
