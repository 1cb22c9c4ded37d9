package metrics

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric types as the Prometheus exposition format names them.
const (
	TypeCounter   = "counter"
	TypeGauge     = "gauge"
	TypeHistogram = "histogram"
	TypeSummary   = "summary"
)

// Family describes one metric family as the code declares it: what docs/metrics.txt and docs/metrics.md list.
type Family struct {
	Name    string
	Type    string
	Help    string
	Labels  []string // as declared (label order is not part of the exposition format)
	Buckets []float64
}

// Catalog is a Registerer that also records the Family of every collector this package's constructors
// create on it. The metrics documentation generator builds every controller on one.
type Catalog struct {
	prometheus.Registerer

	mu       sync.Mutex
	families map[string]Family
}

// NewCatalog returns a Catalog registering on a fresh registry.
func NewCatalog() *Catalog {
	return &Catalog{Registerer: prometheus.NewRegistry(), families: map[string]Family{}}
}

// Families returns the recorded families sorted by name.
func (c *Catalog) Families() []Family {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Family, 0, len(c.families))
	for _, f := range c.families {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Family) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

func (c *Catalog) record(f Family) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.families[f.Name] = f
}

// document records f when reg is a Catalog.
func document(reg prometheus.Registerer, f Family) {
	if c, ok := reg.(*Catalog); ok {
		c.record(f)
	}
}

// NewCounter creates the counter family and registers it on reg (see Register).
func NewCounter(reg prometheus.Registerer, opts prometheus.CounterOpts, labels ...string) *prometheus.CounterVec {
	document(reg, Family{Name: prometheus.BuildFQName(opts.Namespace, opts.Subsystem, opts.Name), Type: TypeCounter, Help: opts.Help, Labels: labels})
	return Register(reg, prometheus.NewCounterVec(opts, labels))
}

// NewGauge creates the gauge family and registers it on reg (see Register).
func NewGauge(reg prometheus.Registerer, opts prometheus.GaugeOpts, labels ...string) *prometheus.GaugeVec {
	document(reg, Family{Name: prometheus.BuildFQName(opts.Namespace, opts.Subsystem, opts.Name), Type: TypeGauge, Help: opts.Help, Labels: labels})
	return Register(reg, prometheus.NewGaugeVec(opts, labels))
}

// NewHistogram creates the histogram family and registers it on reg (see Register). Buckets default to
// Prometheus' default buckets, as client_golang's do.
func NewHistogram(reg prometheus.Registerer, opts prometheus.HistogramOpts, labels ...string) *prometheus.HistogramVec {
	buckets := opts.Buckets
	if buckets == nil {
		buckets = prometheus.DefBuckets
	}
	document(reg, Family{Name: prometheus.BuildFQName(opts.Namespace, opts.Subsystem, opts.Name), Type: TypeHistogram, Help: opts.Help, Labels: labels, Buckets: buckets})
	return Register(reg, prometheus.NewHistogramVec(opts, labels))
}

// NewSummary creates the summary family and registers it on reg (see Register).
func NewSummary(reg prometheus.Registerer, opts prometheus.SummaryOpts, labels ...string) *prometheus.SummaryVec {
	document(reg, Family{Name: prometheus.BuildFQName(opts.Namespace, opts.Subsystem, opts.Name), Type: TypeSummary, Help: opts.Help, Labels: labels})
	return Register(reg, prometheus.NewSummaryVec(opts, labels))
}
