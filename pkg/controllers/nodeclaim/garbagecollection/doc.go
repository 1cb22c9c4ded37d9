// Package garbagecollection reconciles the cloud's instances with the cluster's NodeClaims, both ways, on
// a poll (every two minutes, as Karpenter):
//   - an instance the provider lists (CloudProvider.List) that no NodeClaim refers to (by provider ID, or by
//     name while the claim has no provider ID yet), and that is older than 30 seconds (younger ones may
//     belong to a claim whose launch is being recorded), is terminated (CloudProvider.Delete) and its
//     Node, if any, deleted;
//   - a launched NodeClaim whose instance the provider no longer has (not listed, and Get reports
//     NodeClaimNotFound) is deleted; its termination deletes its Node.
package garbagecollection
