// Package checker validates a scheduling plan against its input, independently of the solver that made it.
//
// It shares no code with package solver beyond the Input and Plan types, and imports nothing of the project
// but those, the API types and the cloud provider's InstanceType: pod requests (with init containers,
// sidecars and overhead), tolerations, node selector terms and their requirement algebra (labels.go),
// daemonset overhead, minValues, host ports, limits, prices, topology spread and pod (anti-)affinity are
// all re-derived here from the Kubernetes objects, with small implementations of its own. The one
// bridge is reading an instance type's requirements, which it takes in API form
// (NodeSelectorRequirements) and interprets itself. Tests and fuzzers run random workloads through the
// solver and this checker, so a bug has to be made twice, differently, to go unnoticed.
//
// Topology is checked the way kube-scheduler would see the plan: pods are replayed in the plan's binding
// order (Placement.Sequence and NodeClaimPlan.Sequences), every planned node exists, and each pod's
// required spread and affinity terms must hold against the pods bound before it. Preferences are not
// checked; they are soft.
package checker
