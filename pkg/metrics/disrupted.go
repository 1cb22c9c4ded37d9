package metrics

import "github.com/prometheus/client_golang/prometheus"

// Values of the reason label of karpenter_nodeclaims_disrupted_total for forceful disruption (interruption
// messages use their kind, for example "spot_interrupted").
const (
	ReasonExpired          = "expired"
	ReasonUnhealthy        = "unhealthy"
	ReasonGarbageCollected = "garbage_collected"
)

// NodeClaimsDisrupted returns karpenter_nodeclaims_disrupted_total{reason,nodepool,capacity_type}, registered
// on reg (or the equal counter registered there before). Every controller that deletes NodeClaims counts
// them here; the description must stay identical wherever it is declared, or registration fails.
func NodeClaimsDisrupted(reg prometheus.Registerer) *prometheus.CounterVec {
	return NewCounter(reg, prometheus.CounterOpts{
		Namespace: Namespace,
		Subsystem: "nodeclaims",
		Name:      "disrupted_total",
		Help:      "NodeClaims Lathe disrupted, by disruption reason, NodePool and capacity type.",
	}, ReasonLabel, NodePoolLabel, CapacityTypeLabel)
}
