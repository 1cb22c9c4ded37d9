// Package userdata writes the EC2 user data that makes an instance join the cluster as a NodeClaim's node, one
// format per AMI family, and reads such a document back the way the node's bootstrap would.
//
// # Formats (as Karpenter's AWS provider writes them)
//
//   - AL2023: a MIME multipart document (boundary "//") whose last part is a nodeadm NodeConfig
//     (node.eks.aws/v1alpha1, content type application/node.eks.aws) with the cluster's name, endpoint, CA
//     and service CIDR, the kubelet configuration inline (maxPods, clusterDNS, registerWithTaints, the
//     EC2NodeClass kubelet settings) and the labels as a --node-labels kubelet flag. The class's userData
//     comes first: its parts when it is MIME, otherwise one part, a NodeConfig when it parses as a YAML
//     mapping and a shell script when it does not.
//   - AL2: a MIME multipart document whose last part is a shell script calling /etc/eks/bootstrap.sh with
//     the endpoint, CA, cluster DNS and kubelet flags (--node-labels, --register-with-taints, --max-pods,
//     ...); the class's userData comes first (its parts, or one shell part).
//   - Bottlerocket: TOML. The class's userData is the base: its settings are kept, except that cluster-name,
//     api-server and cluster-certificate are always Lathe's, node-taints are replaced by the claim's taints,
//     node-labels are merged (the claim's win) and every kubelet setting the node class sets (max pods,
//     cluster DNS, reserved resources, eviction, image GC, CFS quota) overrides the user's. Keys under
//     settings.kubernetes that Bottlerocket does not know are dropped, as upstream drops them.
//   - Windows2019/2022/2025: a <powershell> block, the class's userData first, then a call to the EKS
//     bootstrap script Start-EKSBootstrap.ps1 with -KubeletExtraArgs.
//   - Custom: the class's userData verbatim.
//
// # Assumptions
//
//   - Render returns the plain document; base64 encoding for the launch template is the caller's.
//   - Labels in restricted domains (kubernetes.io, k8s.io and their subdomains, node-restriction) are
//     dropped, because the kubelet may not set them itself; Lathe syncs them onto the Node after it
//     registers. karpenter.sh/do-not-sync-taints=true is added to the labels (the node registers with the
//     claim's taints itself), and the karpenter.sh/unregistered:NoExecute taint is added when absent. All
//     three are what upstream's launch template provider and resolver do before they render user data.
//   - Labels and taints are written sorted, so equal inputs always give byte-equal documents (and equal
//     launch templates).
//   - Parse reads only what a node would act on: for AL2023 the NodeConfig parts merged in order (later
//     parts win, kubelet flags accumulate), for AL2 and Windows the bootstrap call's arguments, for
//     Bottlerocket settings.kubernetes. For Custom it recognises whichever of those formats the document
//     is in, and fails when it is none of them (such a node would not join).
//   - Node.CheckCluster says why a node that read a document would not join a given cluster (another
//     cluster name, API server or CA), so the fake AWS can refuse to boot such an instance into a Node.
package userdata
