// Package scheduling is the pure algebra the scheduling simulator is built on: label requirements (In, NotIn,
// Exists, DoesNotExist, Gt, Lt, Gte, Lte, minValues), taints and tolerations, and pod resource requests.
//
// Everything here is a value computation with no I/O and no API client: the same inputs always give the same
// results, and errors are built to be read by a person ("key "topology.kubernetes.io/zone": In [a] is not
// compatible with In [b]").
//
// # Requirements
//
// A Requirement is the set of values a label may take, plus whether the label may be absent:
//
//	In [a b]        the values a and b; the label must be present
//	NotIn [a]       every value but a; the label may be absent
//	Exists          every value; the label must be present
//	DoesNotExist    only absence
//	Gt 3, Lte 8     the integers 4..8; the label must be present
//
// Requirements maps label keys to Requirement and is built from node selectors, NodePool requirements,
// label maps and pods (nodeSelector plus required node affinity). Intersection narrows two sets, and
// Compatible reports whether any node could satisfy both sides.
//
// The solver lives in the sub-package solver, the independent plan checker in checker, and the offline
// `lathe simulate` command in simulate.
package scheduling
