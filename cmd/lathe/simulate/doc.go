// Package simulate is the offline `lathe simulate` command: it reads Kubernetes manifests, runs the
// scheduling solver against an instance-type catalog and prints the NodeClaims Lathe would launch, what
// they cost, and why any pod can't be placed. It talks to no cluster and no cloud.
//
//	lathe simulate -f workload.yaml -f nodepools.yaml [--catalog catalog.yaml] [-o table|json]
//
// Manifests may hold Pods, Deployments, ReplicaSets and StatefulSets (expanded to their replicas),
// NodePools, EC2NodeClasses, Nodes (pods with spec.nodeName are bound to them), NodeClaims (in flight when
// no Node carries their name), DaemonSets, PersistentVolumeClaims, PersistentVolumes, StorageClasses, and
// Lists of these. `-f -` reads standard input.
//
// Without --catalog the embedded EC2 catalog is used: us-east-1 on-demand prices, offered in us-east-1a,
// us-east-1b and us-east-1c (the zones are a simulation assumption; see package catalog).
//
// Main, the process entry point, holds garbage collection back until the process uses 64 MB (unless
// GOGC or GOMEMLIMIT are set): a run over a thousand pods then finishes without collecting.
package simulate
