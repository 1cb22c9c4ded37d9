package metrics

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

// Label names of the cloud provider metrics (upstream's).
const (
	methodLabel   = "method"
	providerLabel = "provider"
	errorLabel    = "error"
	subsystem     = "cloudprovider"
)

// Collectors are the cloud provider metrics; every decorated provider shares one set.
type Collectors struct {
	duration  *prometheus.HistogramVec
	errors    *prometheus.CounterVec
	cpu       *prometheus.GaugeVec
	memory    *prometheus.GaugeVec
	available *prometheus.GaugeVec
	price     *prometheus.GaugeVec

	mu   sync.Mutex
	last uint64 // fingerprint of the instance types the gauges were last set from
}

// NewCollectors creates the cloud provider metrics and registers them on reg.
func NewCollectors(reg prometheus.Registerer) *Collectors {
	offering := []string{metrics.InstanceTypeLabel, metrics.CapacityTypeLabel, metrics.ZoneLabel}
	return &Collectors{
		// Upstream leaves the buckets at Prometheus' defaults.
		duration: metrics.NewHistogram(reg, prometheus.HistogramOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "duration_seconds",
			Help: "Seconds each call into the cloud provider took, by calling controller, method and provider.",
		}, metrics.ControllerLabel, methodLabel, providerLabel),
		errors: metrics.NewCounter(reg, prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "errors_total",
			Help: "Calls into the cloud provider that returned an error, by calling controller, method, provider and kind of error.",
		}, metrics.ControllerLabel, methodLabel, providerLabel, errorLabel),
		cpu: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "instance_type_cpu_cores",
			Help: "How many vCPUs an instance type has.",
		}, metrics.InstanceTypeLabel),
		memory: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "instance_type_memory_bytes",
			Help: "How much memory an instance type has, in bytes.",
		}, metrics.InstanceTypeLabel),
		available: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "instance_type_offering_available",
			Help: "1 when an instance type can be launched with the capacity type in the zone, 0 when it cannot.",
		}, offering...),
		price: metrics.NewGauge(reg, prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: subsystem, Name: "instance_type_offering_price_estimate",
			Help: "The hourly price Lathe assumes for an instance type with the capacity type in the zone when it compares the cost of nodes.",
		}, offering...),
	}
}

// instanceTypes sets the instance type gauges from a GetInstanceTypes result.
//
// Controllers ask for the instance types on many reconciles, and setting a gauge per offering (thousands
// on EC2) each time was a fifth of Lathe's CPU in a 1,000-pod scale-up; an unchanged result is skipped.
func (c *Collectors) instanceTypes(types []*cloudprovider.InstanceType) {
	sum := fingerprint(types)
	c.mu.Lock()
	defer c.mu.Unlock()
	if sum == c.last {
		return
	}
	c.last = sum
	for _, it := range types {
		if cpu, ok := it.Capacity[corev1.ResourceCPU]; ok {
			c.cpu.WithLabelValues(it.Name).Set(cpu.AsApproximateFloat64())
		}
		if mem, ok := it.Capacity[corev1.ResourceMemory]; ok {
			c.memory.WithLabelValues(it.Name).Set(mem.AsApproximateFloat64())
		}
		for _, o := range it.Offerings {
			c.available.WithLabelValues(it.Name, o.CapacityType, o.Zone).Set(boolValue(o.Available))
			c.price.WithLabelValues(it.Name, o.CapacityType, o.Zone).Set(o.Price)
		}
	}
}

// fingerprint hashes what instanceTypes sets the gauges from.
func fingerprint(types []*cloudprovider.InstanceType) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var buf [8]byte
	num := func(f float64) {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(f))
		_, _ = h.Write(buf[:])
	}
	for _, it := range types {
		_, _ = h.WriteString(it.Name)
		cpu, mem := it.Capacity[corev1.ResourceCPU], it.Capacity[corev1.ResourceMemory]
		num(float64(cpu.MilliValue()))
		num(float64(mem.Value()))
		for _, o := range it.Offerings {
			_, _ = h.WriteString(o.CapacityType)
			_ = h.WriteByte(0)
			_, _ = h.WriteString(o.Zone)
			_ = h.WriteByte(0)
			num(o.Price)
			num(boolValue(o.Available))
		}
	}
	return h.Sum64()
}

// seed makes fingerprints comparable within the process.
var seed = maphash.MakeSeed()

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
