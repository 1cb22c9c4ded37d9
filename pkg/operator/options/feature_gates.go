package options

import (
	"fmt"
	"strconv"
	"strings"
)

// FeatureGates switches features that are not yet generally available. The zero value has every gate off; use
// DefaultFeatureGates for Karpenter's defaults.
type FeatureGates struct {
	// NodeRepair replaces nodes whose health conditions stay bad (alpha).
	NodeRepair bool
	// ReservedCapacity launches into capacity reservations (beta, on by default).
	ReservedCapacity bool
	// SpotToSpotConsolidation lets consolidation replace a spot node with a cheaper spot node (alpha).
	SpotToSpotConsolidation bool
	// NodeOverlay applies NodeOverlay price and capacity adjustments (alpha).
	NodeOverlay bool
	// StaticCapacity keeps a fixed node count for NodePools with replicas (alpha).
	StaticCapacity bool
	// CapacityBuffer provisions headroom from CapacityBuffer objects (alpha).
	CapacityBuffer bool
}

// DefaultFeatureGates returns the gates as Karpenter v1.14 ships them: only ReservedCapacity is on.
func DefaultFeatureGates() FeatureGates {
	return FeatureGates{ReservedCapacity: true}
}

// gateFields lists every gate by name, in the order String prints them.
func (g *FeatureGates) gateFields() []struct {
	name  string
	value *bool
} {
	return []struct {
		name  string
		value *bool
	}{
		{"NodeRepair", &g.NodeRepair},
		{"ReservedCapacity", &g.ReservedCapacity},
		{"SpotToSpotConsolidation", &g.SpotToSpotConsolidation},
		{"NodeOverlay", &g.NodeOverlay},
		{"StaticCapacity", &g.StaticCapacity},
		{"CapacityBuffer", &g.CapacityBuffer},
	}
}

// String returns the gates in FEATURE_GATES form, e.g. "NodeRepair=false,ReservedCapacity=true,...".
func (g FeatureGates) String() string {
	var parts []string
	for _, f := range g.gateFields() {
		parts = append(parts, f.name+"="+strconv.FormatBool(*f.value))
	}
	return strings.Join(parts, ",")
}

// ParseFeatureGates reads a comma-separated Gate=bool list. Gates it doesn't mention keep their defaults; a
// gate named twice takes the last value. An unknown gate, a missing "=" or a value that is not a bool is an error.
func ParseFeatureGates(s string) (FeatureGates, error) {
	g := DefaultFeatureGates()
	fields := g.gateFields()
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, value, ok := strings.Cut(entry, "=")
		if !ok {
			return FeatureGates{}, fmt.Errorf("feature gate %q must be written Gate=true or Gate=false", entry)
		}
		name = strings.TrimSpace(name)
		on, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return FeatureGates{}, fmt.Errorf("feature gate %s must be true or false, not %q", name, strings.TrimSpace(value))
		}
		found := false
		for _, f := range fields {
			if f.name == name {
				*f.value, found = on, true
			}
		}
		if !found {
			return FeatureGates{}, fmt.Errorf("unknown feature gate %q, known gates are %s", name, knownGates())
		}
	}
	return g, nil
}

func knownGates() string {
	var names []string
	for _, f := range (&FeatureGates{}).gateFields() {
		names = append(names, f.name)
	}
	return strings.Join(names, ", ")
}
