// Package reservationexpiry drains nodes out of capacity blocks before EC2 takes them back, as Karpenter's
// capacityreservation.expiration controller does: once a minute it reads the capacity reservations the
// AWS provider's NodeClaims run in (the karpenter.k8s.aws/capacity-reservation-id label) and deletes the
// NodeClaims of every capacity block that is expiring, 40 minutes before its end (ten minutes before EC2
// starts reclaiming its instances, when EC2 sends its own interruption warning). The NodeClaims'
// termination drains their nodes while the provisioner places the pods elsewhere; the expiring blocks'
// offerings are already unavailable, so nothing is planned back into them.
package reservationexpiry
