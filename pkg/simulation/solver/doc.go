// Package solver is Lathe's scheduling simulator: given pending pods, NodePools, the instance types each pool
// may launch, existing nodes with their pods, in-flight NodeClaims and DaemonSets, it decides where every pod
// goes and which new NodeClaims to launch, and explains every pod it could not place.
//
// Solve is pure and deterministic: it does no I/O, imports no API client, iterates no map without sorting,
// and the same Input always gives a byte-identical Plan.
//
// A Base (base.go) prepares an Input once for many variants of it that remove some existing nodes and
// place some of its pods, as consolidation asks; each variant's Plan is Solve's for that variant.
//
// EffectiveZones (zones.go) tells, without placing anything, which zone each pod's own constraints leave it
// (for the provisioner's pending-pods-by-zone gauge).
//
// # Pipeline
//
//	prepare   pods → podInfo (requests, node requirement terms, tolerations, host ports, topology terms,
//	          preferences); NodePools → poolInfo (template requirements, taints, limits, instance types
//	          sorted by price, each with the overhead and host ports of the DaemonSets it admits)
//	          spread hosts: each group counted by hard zone (or other non-hostname) spreads of pods that are
//	          mostly not its members gets one domain, where those spread pods go first and its members
//	          don't (spread_hosts.go); the members of a group with a hard spread pending, or waiting on a
//	          node or claim for the kube-scheduler, are placed away from it or within its skew (settle.go)
//	order     pods sorted largest first (several orders are tried, see Options.Orders)
//	place     for each pod and each relaxation of its preferences:
//	            1. existing nodes and in-flight NodeClaims (already paid for)
//	            2. open new NodeClaims, by lowest marginal cost (price after adding the pod minus price
//	               before), ties to the tightest fit; claims the pod's hostname anti-affinity or spread
//	               rules out are skipped through per-limit lists (eligible.go)
//	            3. a new NodeClaim from the highest-weight NodePool that can hold the pod
//	          with Input.EarlierPlaces (a plan made again), in three rounds: pods needing a host of their
//	          own go back where they were; each other pod goes back where it was if it still fits, and a
//	          seed not placed yet is placed as above; the pods left over are placed as above (keep.go)
//	improve   interchangeable pods (same labels, no constraints of their own) are swapped between claims
//	          when both claims then fit cheaper types
//	repack    claims holding only pods free to go anywhere in their pool (no constraints of their own, not
//	          counted by any topology group) are packed again into the types that hold the most pods per
//	          dollar, when that costs less or the same on fewer nodes
//	finish    each new NodeClaim gets the instance types that fit its pods, cheapest first, at most
//	          Options.MaxInstanceTypes, keeping minValues
//	explain   every unplaced pod gets one reason per NodePool
//
// The orders run in parallel; the cheapest plan wins (fewest unplaced pods first, then price, then the
// order listed first).
package solver
