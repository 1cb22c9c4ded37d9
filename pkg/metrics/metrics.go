// Package metrics holds what Lathe's Prometheus metrics share: the "karpenter" namespace (metric names are
// Karpenter's, so existing dashboards and alerts keep working), label names, and registration that
// tolerates a collector being registered twice (tests build controllers many times).
//
// Each controller package declares its own collectors in its metrics.go and registers them on the
// prometheus.Registerer it is given.
package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace prefixes every Lathe metric, as Karpenter's do.
const Namespace = "karpenter"

// Label names shared by Lathe's metrics.
const (
	NodePoolLabel     = "nodepool"
	NodeClaimLabel    = "nodeclaim"
	NodeLabel         = "node"
	ReasonLabel       = "reason"
	ResourceTypeLabel = "resource_type"
	CapacityTypeLabel = "capacity_type"
	InstanceTypeLabel = "instance_type"
	ZoneLabel         = "zone"
	ControllerLabel   = "controller"
	// MinValuesRelaxedLabel says whether a NodeClaim was created with its NodePool's minValues relaxed.
	MinValuesRelaxedLabel = "min_values_relaxed"
)

// Register registers c on reg and returns the collector that is registered: c, or the equal collector
// registered before (so the caller always updates the one that is exported).
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

// DurationBuckets are upstream Karpenter's histogram buckets for durations from 5 ms to 10 minutes (fine below
// 5 s, where scheduling and API calls fall).
func DurationBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1,
		1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 120, 150, 300, 450, 600}
}

// SummaryObjectives are upstream Karpenter's summary quantiles (min, median, p90, p99, max), each within 1%.
func SummaryObjectives() map[float64]float64 {
	const epsilon = 0.01
	out := map[float64]float64{}
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
		out[q] = epsilon
	}
	return out
}
