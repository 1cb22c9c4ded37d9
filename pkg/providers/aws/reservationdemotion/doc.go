// Package reservationdemotion relabels reserved NodeClaims and Nodes as on-demand once their instance has
// left its capacity reservation (the reservation ended or was cancelled and EC2 kept the instance running
// as on-demand), as Karpenter's capacityreservation.capacitytype controller does: the capacity type and the
// reservation labels then say what the instance is billed as, so pricing, consolidation and budgets see an
// on-demand node.
package reservationdemotion
