// Package drift marks launched NodeClaims Drifted when they no longer match what their NodePool would
// launch today, and clears the mark when they match again. It only marks: the disruption loop's Drift
// method replaces marked claims within the pool's budgets.
//
// A claim is drifted, checked in this order, when
//   - its karpenter.sh/nodepool-hash annotation differs from its NodePool's while both carry the same
//     karpenter.sh/nodepool-hash-version (a different version means the hash was computed differently, not
//     that the template changed): reason NodePoolDrifted;
//   - its labels no longer satisfy the NodePool template's requirements: RequirementsDrifted;
//   - the cloud provider reports a reason (CloudProvider.IsDrifted), for example AMIDrift.
package drift
