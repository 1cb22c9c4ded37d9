// Package e2e runs Lathe end to end on a local cluster: a real etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok (pkg/localcluster), the lathe binary built from this tree with the simulated
// provider, and the getting-started NodePool and EC2NodeClass from examples/. Tests act as a user would
// (apply workloads, scale, delete NodeClaims) and check what the cluster shows.
package e2e
