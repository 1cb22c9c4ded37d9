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

// DurationBuckets are histogram buckets for durations from 5 ms to 10 minutes.
func DurationBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}
}
