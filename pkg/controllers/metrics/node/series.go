package node

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// trackedGauge is a gauge family whose series a pass rewrites in place: set updates or adds a series and
// sweep, at the end of the pass, deletes those the pass did not set. A scrape during a pass sees every
// series of the last pass (some already updated), never a family emptied for re-population.
type trackedGauge struct {
	vec       *prometheus.GaugeVec
	last, set map[string]prometheus.Labels // series key → labels: of the last pass, and of this one so far
}

func newTrackedGauge(vec *prometheus.GaugeVec) *trackedGauge {
	return &trackedGauge{vec: vec, last: map[string]prometheus.Labels{}, set: map[string]prometheus.Labels{}}
}

// setValue sets the series with the labels.
func (g *trackedGauge) setValue(labels prometheus.Labels, v float64) {
	g.vec.With(labels).Set(v)
	g.set[seriesKey(labels)] = labels
}

// sweep deletes the series of the last pass this pass did not set, and starts the next pass.
func (g *trackedGauge) sweep() {
	for key, labels := range g.last {
		if _, ok := g.set[key]; !ok {
			g.vec.Delete(labels)
		}
	}
	g.last, g.set = g.set, map[string]prometheus.Labels{}
}

// seriesKey identifies a label set: its name=value pairs, sorted.
func seriesKey(labels prometheus.Labels) string {
	pairs := make([]string, 0, len(labels))
	for k, v := range labels {
		pairs = append(pairs, k+"="+v)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "\xff")
}
