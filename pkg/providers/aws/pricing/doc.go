// Package pricing keeps the region's instance prices for the AWS provider: on-demand from the Pricing API
// (GetProducts, Linux, shared tenancy, and dedicated tenancy for bare metal, as Karpenter's AWS provider
// asks), spot from DescribeSpotPriceHistory (the newest price per type and zone). Prices are refreshed every
// RefreshInterval; a failed refresh backs off and keeps the prices it had. The embedded catalog's prices
// (its on-demand prices and its spot model) answer for anything the APIs have not priced, and are the only
// source with ISOLATED_VPC, where the provider makes no calls.
package pricing
