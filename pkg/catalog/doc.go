// Package catalog builds instance-type catalogs for the scheduling simulator, tests and benchmarks.
//
// Three sources are supported:
//
//   - EC2: the embedded EC2 data (1,363 instance types with Karpenter's labels and allocatable, us-east-1
//     on-demand prices; see data/README.md for provenance). Zones and spot prices are simulation
//     assumptions described on EC2Options.
//   - A catalog file (YAML or JSON, see File) that states capacity, overhead, labels and an explicit
//     offerings list per type, for any made-up or recorded catalog.
//   - KarpenterBenchmark: the 400 fake-it-N types of Karpenter's scheduling benchmark.
package catalog
