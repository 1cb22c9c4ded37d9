// Package cloudprovider is the boundary between Lathe's core and the clouds it launches nodes in.
//
// It holds the CloudProvider interface (with the contract each method keeps), the typed errors core branches
// on (never on message text), and the InstanceType and Offering values the scheduling simulator ranks. It has
// no implementation: the AWS provider, the simulated provider and the unit-test fake (package fake) live
// elsewhere.
package cloudprovider
