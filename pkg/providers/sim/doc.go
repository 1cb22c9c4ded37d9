// Package sim is Lathe's simulated cloud provider, for end-to-end runs on a cluster without a cloud (kind or
// Lathe's local control plane plus kwok). It is not the unit-test double (that is cloudprovider/fake): it
// talks to a real API server and its "instances" outlive the process.
//
// # Assumptions
//
//   - A Node object is the instance. Create writes a Node named after the NodeClaim, annotated
//     kwok.x-k8s.io/node=fake so that kwok plays its kubelet and keeps it Ready. The Node carries every label
//     the instance type has, the NodeClaim's labels, the karpenter.sh/unregistered:NoExecute taint (as a node
//     booted from Karpenter's user data does) plus the NodeClaim's taints and startup taints, and the
//     instance type's capacity and allocatable (capacity minus the type's overhead), both as the EC2NodeClass
//     shapes them: kubelet maxPods, podsPerCore, kubeReserved, systemReserved and eviction thresholds, and the
//     root volume of its block device mappings (catalog.ForNodeClass, Karpenter's AWS overhead model).
//   - Provider IDs look like sim:///<zone>/i-<17 hex digits>. The Node's sim.lathe.sh/nodeclaim and
//     sim.lathe.sh/instance-id labels link it to its NodeClaim and provider ID, which makes Create idempotent:
//     a retried Create finds the existing instance instead of launching a second.
//   - Terminating an instance marks its Node sim.lathe.sh/terminated=true and deletes it. From then on the
//     instance counts as gone (Delete returns NodeClaimNotFound, Get and List skip it) even while the Node
//     object waits for Lathe's termination finalizer, just as EC2 reports a terminated instance while its
//     Node is still being cleaned up. Without this the node finalizer (which waits for the instance) and the
//     instance (which would wait for the Node) would wait on each other.
//   - The default catalog is the embedded EC2 catalog (package catalog) in us-east-1a/b/c, on-demand at the
//     catalog's us-east-1 prices and spot at the catalog's simulated discount (35% of on-demand; EC2 spot
//     prices are not in the data, so spot prices are made up).
//   - Insufficient capacity is injected, never random: through SetInsufficientCapacity, or through the
//     ConfigMap kube-system/lathe-sim whose key insufficientCapacity holds lines such as
//     "m5.large/us-east-1a/spot" ("*" matches any value, "#" starts a comment). Create walks the allowed
//     offerings from the cheapest, like an EC2 Fleet: an injected offering is marked unavailable for three
//     minutes (on the injected clock) and the next one is tried. GetInstanceTypes reports injected and
//     recently failed offerings with Available false. The ConfigMap is read uncached, and calls that come while
//     a read is in flight share it.
//   - Every EC2NodeClass resolves: the NodeClassController fills its status with three simulated subnets
//     (one per zone), one security group, one AMI per architecture and an instance profile, and sets it Ready.
//   - Nothing drifts (IsDrifted returns ""); interruptions happen only when asked for: through Interrupt, or
//     by annotating a Node sim.lathe.sh/interrupt=<kind> (InterruptionController), which also reclaims the
//     instance as EC2 would (a spot instance two minutes after the warning, a terminated one at once).
package sim
