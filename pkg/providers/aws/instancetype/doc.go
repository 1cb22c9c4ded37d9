// Package instancetype lists the instance types the AWS provider can launch for an EC2NodeClass: their
// facts from DescribeInstanceTypes, the zones that offer them from DescribeInstanceTypeOfferings, prices from
// package pricing and availability from the unavailable-offerings cache.
//
// Each DescribeInstanceTypes answer becomes a catalog.Shape (shape.go), and from there the provider goes
// through the very functions the embedded catalog and the simulated provider use: catalog.InstanceType for
// labels and capacity, catalog.ForNodeClassWithVMOverhead for the node class's kubelet settings and the
// hypervisor's share of memory. There is one capacity and overhead model, not two.
//
// Type facts and offerings are refreshed every RefreshInterval, as Karpenter's AWS provider does; the
// shaped list of a node class is cached for ListTTL and dropped as soon as the facts or offerings change.
// Offerings get their prices and availability on every List, so that a new price or an unavailable
// offering shows at once.
package instancetype
