// Package static keeps static NodePools (spec.replicas, the StaticCapacity feature gate) at their replica
// count, as upstream Karpenter's static provisioning and deprovisioning controllers do: it launches
// NodeClaims from the pool's template when there are too few (within limits.nodes) and deletes the cheapest
// to lose when there are too many (claims that never launched first, then by the eviction cost of their
// pods). Scaling bypasses disruption budgets; the drain still respects PodDisruptionBudgets. Drifted static
// nodes are replaced by the disruption loop (disruption.StaticDrift), within budgets.
package static
