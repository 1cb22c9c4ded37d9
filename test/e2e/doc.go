// Package e2e runs Lathe end to end on a local cluster: a real etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok (pkg/localcluster), the lathe binary built from this tree with the simulated
// provider, and the getting-started NodePool and EC2NodeClass from examples/. Tests act as a user would
// (apply workloads, scale, delete NodeClaims) and check what the cluster shows.
//
// Three environment variables help when reading a run afterwards: LATHE_E2E_KEEP_WORK=1 keeps the work
// directory (cluster.log holds every component's log), LATHE_E2E_LOG_LEVEL sets Lathe's LOG_LEVEL, and
// LATHE_E2E_AUDIT=1 has the API server write an audit log there (every request's client, verb, object,
// outcome and timing; the body of Node, NodeClaim and pod status patches and of bindings), to count who asks
// the API server for what and to follow each pod: its hints set and cleared, and where it was bound.
package e2e
